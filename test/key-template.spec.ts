import * as ts from 'typescript';
import { runInNewContext } from 'node:vm';
import { KeyTemplateError } from '../lib';
import { compileKeyTemplate, parseKeyTemplate } from '../lib/decorators/key-template';
import { declaredParameters } from '../lib/decorators/parameter-names';

/** Unit tests of the pure parts: reading parameter names from source, parsing and evaluating templates. */

describe('declaredParameters', () => {
  const names = (fn: Function) => declaredParameters(fn)?.map((p) => (p.rest ? `...${p.name}` : (p.name ?? '<destructured>')));

  it('reads plain, default, destructured and rest parameters of a method', () => {
    class Subject {
      async pay(id: string, amount = 5, { customer }: { customer: string } = { customer: 'x' }, [first]: string[] = [], ...rest: unknown[]) {
        return [id, amount, customer, first, rest];
      }
    }
    expect(names(Subject.prototype.pay)).toEqual(['id', 'amount', '<destructured>', '<destructured>', '...rest']);
  });

  it('is not fooled by commas and brackets inside default values, strings, templates, regexes and comments', () => {
    class Subject {
      run(
        a = { x: [1, 2], y: ')' }, // comment with , and )
        b = `t,${'(' + ')'}`,
        /* c, d */ c = /[,)]/g,
        d = (x: number, y: number) => x + y,
        e = "a,b",
      ) {
        return [a, b, c, d, e];
      }
    }
    expect(names(Subject.prototype.run)).toEqual(['a', 'b', 'c', 'd', 'e']);
  });

  it('reads the source shapes tsc and hand-written code produce', () => {
    // eslint-disable-next-line @typescript-eslint/no-unused-vars
    const es5 = function (orderId: string, dto: unknown) {};
    expect(names(es5)).toEqual(['orderId', 'dto']);
    expect(names(async function named(x: number) {})).toEqual(['x']);
    expect(names((a: number, b: number) => a + b)).toEqual(['a', 'b']);
    expect(names(((single: number) => single) as Function)).toEqual(['single']);
    // eslint-disable-next-line no-new-func
    expect(names(new Function('sku', 'qty', 'return sku'))).toEqual(['sku', 'qty']);
    const computed = { ['weird,name'](x: number) { return x; }, async *gen(y: number) { yield y; }, "quoted (name)"(z: number) { return z; } };
    expect(names(computed['weird,name'])).toEqual(['x']);
    expect(names(computed.gen)).toEqual(['y']);
    expect(names(computed['quoted (name)'])).toEqual(['z']);
    expect(names(function () {})).toEqual([]);
    expect(names((a: number,) => a)).toEqual(['a']);
  });

  it.each(['ES5', 'ES2015', 'ES2017', 'ES2022'] as const)('reads methods as tsc compiles them for %s (async, defaults, destructuring)', (target) => {
    const source = `
      class Orders {
        async pay(orderId: string, amount: number = 1, { note }: { note?: string } = {}) { return orderId; }
        async bulk(first: string, ...others: string[]) { return first; }
      }
      exports.Orders = Orders;`;
    const compiled = ts.transpileModule(source, {
      compilerOptions: { target: ts.ScriptTarget[target], module: ts.ModuleKind.CommonJS, lib: ['es2022'] },
    }).outputText;
    const exports: { Orders?: { prototype: Record<string, Function> } } = {};
    runInNewContext(compiled, { exports, Promise, Symbol, Object, Array, TypeError });
    expect(names(exports.Orders!.prototype.pay)).toEqual(['orderId', 'amount', target === 'ES5' ? '_a' : '<destructured>']);
    // ES5 has no rest syntax: tsc turns `...others` into a loop over `arguments`, leaving only `first`.
    expect(names(exports.Orders!.prototype.bulk)).toEqual(target === 'ES5' ? ['first'] : ['first', '...others']);
  });

  it('gives up (undefined) on native and bound functions instead of guessing', () => {
    expect(declaredParameters(Math.max)).toBeUndefined();
    expect(declaredParameters(function (a: number) { return a; }.bind(null))).toBeUndefined();
  });
});

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
});
