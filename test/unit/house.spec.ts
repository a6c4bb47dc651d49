import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import * as ts from 'typescript';

/**
 * The shape of lib/ (docs/architecture.md#layers), from the code's own imports, type-only ones
 * included: no import circle, every import goes down the layers (or stays in its own), and no
 * source file is longer than 300 lines. The layers, bottom first; a file belongs to the first
 * entry that is its path or a folder holding it, matched longest first.
 */
const LAYERS: readonly (readonly string[])[] = [
  ['lib/messages/', 'lib/held-since.ts', 'lib/monotonic-clock.ts'],
  ['lib/lock.messages.ts'],
  ['lib/errors/', 'lib/errors.ts', 'lib/lock.options.ts', 'lib/layout.options.ts'],
  ['lib/metrics/', 'lib/validators.ts', 'lib/lock.module-definition.ts'],
  ['lib/redis/'],
  ['lib/runtime/'],
  ['lib/layouts/', 'lib/deadlocks/'],
  ['lib/engine/'],
  ['lib/locks/'],
  ['lib/semaphores/'],
  ['lib/introspection/', 'lib/terminus/'],
  ['lib/lock.service.ts', 'lib/fair-lock.service.ts', 'lib/read-write-lock.service.ts'],
  ['lib/decorators/', 'lib/board/'],
  ['lib/http/'],
  ['lib/lock.module.ts'],
  ['lib/testing/', 'lib/index.ts'],
];
const MAX_LINES = 300;

const ROOT = join(__dirname, '..', '..');
const GENERATED = /\.generated\.ts$/;

function sourceFiles(dir: string, extensions: RegExp): string[] {
  return readdirSync(join(ROOT, dir)).flatMap((name) => {
    const path = `${dir}/${name}`;
    if (statSync(join(ROOT, path)).isDirectory()) return sourceFiles(path, extensions);
    return extensions.test(name) && !GENERATED.test(name) && !name.endsWith('.d.ts') ? [path] : [];
  });
}

/** The lib/ files `file` imports (relative specifiers only: packages are not rooms of the house). */
function importsOf(file: string, files: ReadonlySet<string>): string[] {
  const { importedFiles } = ts.preProcessFile(readFileSync(join(ROOT, file), 'utf8'), true, true);
  return importedFiles
    .map((imported) => imported.fileName)
    .filter((specifier) => specifier.startsWith('.'))
    .map((specifier) => {
      const base = relative(ROOT, resolve(ROOT, dirname(file), specifier));
      return [`${base}.ts`, `${base}/index.ts`, base].find((candidate) => files.has(candidate));
    })
    .filter((target): target is string => target !== undefined);
}

function layerOf(file: string): number {
  let best = -1;
  let bestLength = -1;
  LAYERS.forEach((entries, index) => {
    for (const entry of entries) {
      const holds = entry.endsWith('/') ? file.startsWith(entry) : file === entry;
      if (holds && entry.length > bestLength) {
        best = index;
        bestLength = entry.length;
      }
    }
  });
  return best;
}

/** Strongly connected components of more than one file (Tarjan): the import circles. */
function circles(graph: ReadonlyMap<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (file: string): void => {
    index.set(file, next);
    low.set(file, next++);
    stack.push(file);
    onStack.add(file);
    for (const target of graph.get(file) ?? []) {
      if (!index.has(target)) {
        visit(target);
        low.set(file, Math.min(low.get(file)!, low.get(target)!));
      } else if (onStack.has(target)) {
        low.set(file, Math.min(low.get(file)!, index.get(target)!));
      }
    }
    if (low.get(file) === index.get(file)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== file);
      if (component.length > 1 || (graph.get(file) ?? []).includes(file)) found.push(component.sort());
    }
  };
  for (const file of graph.keys()) if (!index.has(file)) visit(file);
  return found;
}

describe('the house: lib/ imports', () => {
  const files = sourceFiles('lib', /\.ts$/);
  const fileSet = new Set(files);
  const graph = new Map(files.map((file) => [file, importsOf(file, fileSet)]));

  it('reads the whole library (every file on a layer)', () => {
    expect(files.length).toBeGreaterThan(150);
    expect(files.filter((file) => layerOf(file) === -1)).toEqual([]);
  });

  it('has no import circle', () => {
    expect(circles(graph)).toEqual([]);
  });

  it('has no import that runs back up a layer', () => {
    const upward = [...graph].flatMap(([file, targets]) =>
      targets.filter((target) => layerOf(target) > layerOf(file)).map((target) => `${file} -> ${target}`),
    );
    expect(upward).toEqual([]);
  });

  it(`has no source file over ${MAX_LINES} lines (the board's page script included)`, () => {
    const long = sourceFiles('lib', /\.(ts|js)$/)
      .map((file) => ({ file, lines: readFileSync(join(ROOT, file), 'utf8').split('\n').length - 1 }))
      .filter(({ lines }) => lines > MAX_LINES)
      .map(({ file, lines }) => `${file}: ${lines}`);
    expect(long).toEqual([]);
  });
});
