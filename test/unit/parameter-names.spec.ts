import * as ts from 'typescript';
import { runInNewContext } from 'node:vm';
import { declaredParameters } from '../../lib/decorators/parameter-names';
import { closingIndex, skipLiteral, splitTopLevel, withoutComments } from '../../lib/decorators/source-scanner';

/** Reading a method's parameter names from its source, without Redis (what key templates name). */

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

describe('source scanner', () => {
  it('skipLiteral steps over strings, templates (with nested ${...}), comments and regexes, and nothing else', () => {
    expect(skipLiteral(`'a\\'b', x`, 0, '')).toBe(6);
    expect(skipLiteral(`"a,b" + c`, 0, '')).toBe(5);
    expect(skipLiteral('`a${ `}` }b`, x', 0, '')).toBe(12);
    expect(skipLiteral('// a, b\nc', 0, '')).toBe(8);
    expect(skipLiteral('/* ) */x', 0, '')).toBe(7);
    expect(skipLiteral('/[/)]/gi, x', 0, '=')).toBe(8);
    expect(skipLiteral('x, y', 0, '')).toBe(-1);
  });

  it('skipLiteral reads a / after a value as a division, and after an operator as a regex', () => {
    expect(skipLiteral('/ 2, b', 0, ')')).toBe(-1);
    expect(skipLiteral('/ 2, b', 0, 'a')).toBe(-1);
    expect(skipLiteral('/,/, b', 0, '(')).toBe(3);
  });

  it('skipLiteral ends an unclosed literal at the end of the source (or a regex at its line)', () => {
    expect(skipLiteral("'never closed", 0, '')).toBe(13);
    expect(skipLiteral('/* never closed', 0, '')).toBe(15);
    expect(skipLiteral('/abc\nd', 0, '(')).toBe(4);
  });

  it('closingIndex finds the matching bracket past nested brackets and literals', () => {
    const source = "(a = [')', { b: '}' }], c = /\\)/) => d";
    expect(closingIndex(source, 0)).toBe(source.indexOf(') =>'));
    expect(closingIndex('{ a: `}${"}"}` }', 0)).toBe(15);
    expect(closingIndex('(unbalanced', 0)).toBe(11);
  });

  it('splitTopLevel splits on commas outside brackets and literals only', () => {
    expect(splitTopLevel('a, b = [1, 2], { c, d }, e = "x,y", f = (g, h) => g')).toEqual([
      'a',
      ' b = [1, 2]',
      ' { c, d }',
      ' e = "x,y"',
      ' f = (g, h) => g',
    ]);
    expect(splitTopLevel('')).toEqual(['']);
    expect(splitTopLevel('a;b,c', ';')).toEqual(['a', 'b,c']);
  });

  it('withoutComments removes comments and keeps strings that look like comments', () => {
    expect(withoutComments('a /* x, y */, b // z\n, c')).toBe('a  , b  , c');
    expect(withoutComments(`s = "/* kept */", t = '// kept'`)).toBe(`s = "/* kept */", t = '// kept'`);
  });
});
