import { KeyTemplateError } from '../../lib';
import { compileKeyTemplate, parseKeyTemplate } from '../../lib/decorators/key-template';
import { declaredParameters } from '../../lib/decorators/parameter-names';

/** Key templates without Redis: parsing, checking against the method's parameters at compile time, evaluating per call. */

describe('parseKeyTemplate', () => {
  it('splits text and placeholders of every form', () => {
    expect(parseKeyTemplate('order:#id')).toEqual(['order:', { source: '#id', root: 'id', steps: [] }]);
    expect(parseKeyTemplate('cart:#dto.customer.id:#dto.items[0].sku')).toEqual([
      'cart:',
      { source: '#dto.customer.id', root: 'dto', steps: [{ property: 'customer' }, { property: 'id' }] },
      ':',
      { source: '#dto.items[0].sku', root: 'dto', steps: [{ property: 'items' }, { index: 0 }, { property: 'sku' }] },
    ]);
    expect(parseKeyTemplate('user:#{user.id}-profile')).toEqual([
      'user:',
      { source: '#{user.id}', root: 'user', steps: [{ property: 'id' }] },
      '-profile',
    ]);
    expect(parseKeyTemplate("#0#p1#a2#m['x-y']")).toEqual([
      { source: '#0', root: '0', steps: [] },
      { source: '#p1', root: 'p1', steps: [] },
      { source: '#a2', root: 'a2', steps: [] },
      { source: "#m['x-y']", root: 'm', steps: [{ property: 'x-y' }] },
    ]);
  });

  it('ends a bare placeholder where the path stops: a trailing dot or bracket is text', () => {
    expect(parseKeyTemplate('#id.')).toEqual([{ source: '#id', root: 'id', steps: [] }, '.']);
    expect(parseKeyTemplate('#id-#n[x]')).toEqual([{ source: '#id', root: 'id', steps: [] }, '-', { source: '#n', root: 'n', steps: [] }, '[x]']);
  });

  it('reads ## as a literal # and keeps a template without placeholders as it is', () => {
    expect(parseKeyTemplate('issue###id')).toEqual(['issue#', { source: '#id', root: 'id', steps: [] }]);
    expect(parseKeyTemplate('nightly-report')).toEqual(['nightly-report']);
  });

  it('reads braces with spaces, positions inside braces, and quoted keys with escapes', () => {
    expect(parseKeyTemplate('#{ user.id }!')).toEqual([{ source: '#{ user.id }', root: 'user', steps: [{ property: 'id' }] }, '!']);
    expect(parseKeyTemplate('#{0.items[2]}')).toEqual([{ source: '#{0.items[2]}', root: '0', steps: [{ property: 'items' }, { index: 2 }] }]);
    expect(parseKeyTemplate(`#m["a\\"b"]`)).toEqual([{ source: `#m["a\\"b"]`, root: 'm', steps: [{ property: 'a"b' }] }]);
    expect(parseKeyTemplate('#dto.0')).toEqual([{ source: '#dto.0', root: 'dto', steps: [{ property: '0' }] }]);
  });

  it('names the position of the syntax error in the template', () => {
    expect(() => parseKeyTemplate('order:# id')).toThrow('Key template "order:# id" is invalid at position 6');
    expect(() => parseKeyTemplate('ab#{x')).toThrow('is invalid at position 2');
  });

  it.each([
    ['', 'cannot be empty'],
    ['order:#', "'#' must be followed"],
    ['order:# id', "'#' must be followed"],
    ['user:#{user.id', 'never closed'],
    ['user:#{}', 'does not start with a parameter'],
    ['user:#{user.id + 1}', 'is not a path'],
  ])('rejects %j with a KeyTemplateError naming the problem', (template, problem) => {
    expect(() => parseKeyTemplate(template)).toThrow(KeyTemplateError);
    expect(() => parseKeyTemplate(template)).toThrow(problem);
  });
});

describe('compileKeyTemplate', () => {
  class Orders {
    pay(id: string, dto: { customer?: { id?: unknown }; items?: { sku: string }[] }, ...tags: string[]) {
      return [id, dto, tags];
    }
    destructured({ sku }: { sku: string }, p1: string) {
      return [sku, p1];
    }
  }
  const payParams = declaredParameters(Orders.prototype.pay);
  const compile = (template: string, params = payParams) => compileKeyTemplate(template, params, 'Orders.pay');

  it('evaluates names, paths, braces, positions and rest parameters', () => {
    const args = ['o-1', { customer: { id: 42 }, items: [{ sku: 'A' }, { sku: 'B' }] }, 'red', 'blue'];
    expect(compile('order:#id')(args)).toBe('order:o-1');
    expect(compile('cart:#dto.customer.id:#dto.items[1].sku')(args)).toBe('cart:42:B');
    expect(compile('#{id}-suffix')(args)).toBe('o-1-suffix');
    expect(compile('#0/#p0/#a0')(args)).toBe('o-1/o-1/o-1');
    expect(compile('#tags[1]:#3')(args)).toBe('blue:blue');
  });

  it('lets a real parameter named p1 win over the positional alias, and reaches destructured parameters by position', () => {
    const params = declaredParameters(Orders.prototype.destructured);
    const build = compileKeyTemplate('#0.sku:#p1', params, 'Orders.destructured');
    expect(build([{ sku: 'S' }, 'real-p1'])).toBe('S:real-p1');
  });

  it('fails at compile time naming method and parameter for an unknown name', () => {
    expect(() => compile('order:#orderId')).toThrow(KeyTemplateError);
    expect(() => compile('order:#orderId')).toThrow(/Orders\.pay.*"orderId".*\(its parameters: id, dto, \.\.\.tags\)/);
    const params = declaredParameters(Orders.prototype.destructured);
    expect(() => compileKeyTemplate('#sku', params, 'Orders.destructured')).toThrow(/#0 \(destructured\)/);
  });

  it('fails at compile time for a position past the declared parameters (no rest parameter)', () => {
    const params = declaredParameters(Orders.prototype.destructured);
    expect(() => compileKeyTemplate('#2', params, 'Orders.destructured')).toThrow(/uses #2.*declares 2 parameters/);
  });

  it('hints at minification and at positions when the parameter names look minified', () => {
    // What a minifier makes of `async pay(id, dto)`.
    const minified = { async n(e: unknown, t: unknown) { return [e, t]; } };
    const params = declaredParameters(minified.n);
    expect(() => compileKeyTemplate('order:#id', params, 'r.n')).toThrow(
      /names parameter "id".*\(its parameters: e, t\)\. These names look minified.*#0, #1\.field/,
    );
    expect(compileKeyTemplate('order:#0', params, 'r.n')(['o-1', {}])).toBe('order:o-1');
    // Real short names are not called minified.
    expect(() => compile('order:#orderId')).not.toThrow(/minified/);
  });

  it('a typo for a short real name (#orderId for id) names the parameters and the likely one, not minification', () => {
    const service = { async pay(id: string) { return id; }, async move(from: string, to: string) { return [from, to]; } };
    const message = (template: string, method: Function, name: string) => {
      try {
        compileKeyTemplate(template, declaredParameters(method), name);
      } catch (error) {
        return (error as Error).message;
      }
      throw new Error('compiled');
    };
    expect(message('order:#orderId', service.pay, 'OrdersService.pay')).toBe(
      '@DistributedLock on OrdersService.pay: key template "order:#orderId" names parameter "orderId", which OrdersService.pay does not have (its parameters: id). Did you mean #id?',
    );
    expect(message('stock:#form', service.move, 'Stock.move')).toMatch(/\(its parameters: from, to\)\. Did you mean #from\?$/);
    expect(message('stock:#ID', service.pay, 'X.pay')).toMatch(/Did you mean #id\?$/);
    // Nothing close: the parameters only.
    expect(message('stock:#warehouse', service.move, 'Stock.move')).toMatch(/\(its parameters: from, to\)$/);
    expect(message('order:#orderId', service.pay, 'OrdersService.pay')).not.toMatch(/minified/);
  });

  it('needs readable names for a named placeholder, but positions work without them', () => {
    expect(() => compileKeyTemplate('#id', undefined, 'X.y')).toThrow(/cannot be read.*minifier.*#0/);
    expect(compileKeyTemplate('#1', undefined, 'X.y')(['a', 'b'])).toBe('b');
  });

  it.each([
    ['undefined', [undefined, {}], 'order:#id', /#id in "order:#id" is undefined/],
    ['null', [null, {}], 'order:#id', /is null/],
    ['an empty string', ['', {}], 'order:#id', /is an empty string/],
    ['a plain object', [{ a: 1 }, {}], 'order:#id', /is an object/],
    ['an array', [['a'], {}], 'order:#id', /is an array/],
    ['NaN', [NaN, {}], 'order:#id', /is NaN/],
    ['a missing intermediate', ['x', {}], '#dto.customer.id', /unreachable \(#dto.customer is undefined\)/],
    ['a missing nested value', ['x', { customer: {} }], '#dto.customer.id', /#dto.customer.id .* is undefined/],
  ])('refuses %s at call time with a KeyTemplateError', (_what, args, template, message) => {
    const build = compile(template);
    expect(() => build(args)).toThrow(KeyTemplateError);
    expect(() => build(args)).toThrow(message);
  });

  it('uses the text of objects that have one (Date, ids) and of numbers, bigints and booleans', () => {
    const date = new Date(0);
    class ObjectId {
      toString() {
        return 'abc123';
      }
    }
    expect(compile('#id')([date])).toBe(String(date));
    expect(compile('#id')([new ObjectId()])).toBe('abc123');
    expect(compile('#id:#1')([7, true])).toBe('7:true');
    expect(compile('#id')([10n])).toBe('10');
  });
  it('builds literal-only, text-first, placeholder-first and many-part templates alike', () => {
    const args = ['o-1', { customer: { id: 42 } }];
    expect(compile('nightly-report')(args)).toBe('nightly-report');
    expect(compile('order:#id')(args)).toBe('order:o-1');
    expect(compile('#id:order')(args)).toBe('o-1:order');
    expect(compile('#id')(args)).toBe('o-1');
    expect(compile('a:#id:b:#dto.customer.id:c')(args)).toBe('a:o-1:b:42:c');
    expect(compile('issue##:#id')(args)).toBe('issue#:o-1');
  });

  it('names the decorator that uses the template in compile-time errors', () => {
    expect(() => compileKeyTemplate('#nope', payParams, 'Orders.pay', '@DistributedSemaphore')).toThrow(/^@DistributedSemaphore on Orders\.pay/);
    expect(() => compileKeyTemplate('#nope', undefined, 'Orders.pay', '@DistributedSemaphore')).toThrow(/^@DistributedSemaphore on Orders\.pay/);
    expect(() => compile('#nope')).toThrow(/^@DistributedLock on Orders\.pay/);
  });

  it('reads a leading-zero root as a name, not a position', () => {
    expect(() => compile('#01')).toThrow(/names parameter "01"/);
  });

  it.each([
    ['Infinity', Infinity, /is Infinity/],
    ['a symbol', Symbol('s'), /is a symbol/],
    ['a function', () => 'x', /is a function/],
    ['an object whose text is empty', { toString: () => '' }, /is an object whose text is empty/],
    ['an object whose text is [object ...]', { toString: () => '[object Thing]' }, /whose text is "\[object Thing\]"/],
    ['an object without a prototype', Object.create(null), /is an object/],
  ])('refuses %s as key text, naming the method and the placeholder', (_what, value, message) => {
    const build = compile('order:#id');
    expect(() => build([value])).toThrow(KeyTemplateError);
    expect(() => build([value])).toThrow(/^Lock key for Orders\.pay not built: #id in "order:#id"/);
    expect(() => build([value])).toThrow(message);
  });
});
