import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * `npm run docs:check` itself (scripts/docs-check.js), on test/fixtures/docs-check/: the good samples
 * and links there pass (one of them runs against Redis), and each bad one is reported at its line.
 * Samples compile exactly as printed (nothing imported for them, no hidden setup) with the
 * tsconfig.json that the fixture's docs/getting-started.md gives, as the real page gives its readers.
 */
const ROOT = join(__dirname, '..');

function check(root: string, ...args: string[]): { output: string; status: number | null } {
  const run = spawnSync(process.execPath, ['scripts/docs-check.js', '--root', root, ...args], {
    cwd: ROOT,
    encoding: 'utf8',
    env: { ...process.env, DOCS_RUN_TIMEOUT_MS: '15000' },
    timeout: 120_000,
  });
  return { output: `${run.stdout}${run.stderr}`, status: run.status };
}

const problemsOf = (output: string) => output.split('\n').filter((line) => /^(README|docs\/)\S*\.md(:\d+)?: /.test(line));

describe('docs:check', () => {
  let output = '';
  let status: number | null = null;

  beforeAll(() => {
    ({ output, status } = check('test/fixtures/docs-check'));
  }, 130_000);

  it('fails, naming each broken sample, runnable sample and link by file and line, and nothing else', () => {
    expect(status).toBe(1);
    expect(problemsOf(output)).toEqual([
      'README.md:95: broken link (docs/missing.md): docs/missing.md does not exist',
      'README.md:95: broken link (docs/page.md#no-such-heading): no heading or <a id> "#no-such-heading" in docs/page.md',
      'README.md:79: a hidden <!-- ts-setup --> is not read any more: a sample compiles as printed, so declare what it leaves out in the block',
      "README.md:67: sample does not compile: TS2339 at README.md:71:30: Property 'runExclusive' does not exist on type 'LockService'.",
      "README.md:74: sample does not compile: TS2304 at README.md:75:2: Cannot find name 'Injectable'. (import or declare it in the sample: the checker adds nothing)",
      expect.stringMatching(/^README\.md:82: sample does not compile: TS1378 at README\.md:83:20: Top-level 'await' expressions are only allowed/),
      'README.md:86: runnable sample exited with 1',
      'README.md:90: runnable sample did not exit within 15000 ms (does it close everything it opens?)',
    ]);
    expect(output).toContain('Error: bad sample ran and failed');
  });

  it('runs the good runnable sample against Redis', () => {
    expect(output).toMatch(/ran README\.md:38 \(\d+ ms\)/);
    expect(output).toContain("docs:check samples: 8 compiled with docs/getting-started.md's tsconfig.json, 3 errors");
  });

  it("compiles with the page's tsconfig.json: without its esModuleInterop, `import request from 'supertest'` fails as it would for a reader", () => {
    const root = mkdtempSync(join(tmpdir(), 'docs-check-'));
    try {
      cpSync(join(ROOT, 'test/fixtures/docs-check'), root, { recursive: true });
      const page = join(root, 'docs/getting-started.md');
      writeFileSync(page, readFileSync(page, 'utf8').replace('    "esModuleInterop": true,\n', ''));
      const run = check(root, '--only', 'samples', '--no-run');
      expect(problemsOf(run.output)).toContainEqual(expect.stringMatching(/^README\.md:24: sample does not compile: TS1259 at README\.md:25:8: .*esModuleInterop/));

      rmSync(page);
      expect(problemsOf(check(root, '--only', 'samples', '--no-run').output)).toEqual([
        'README.md:79: a hidden <!-- ts-setup --> is not read any more: a sample compiles as printed, so declare what it leaves out in the block',
        'docs/getting-started.md: missing: the samples are compiled with the tsconfig.json it gives',
      ]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  }, 60_000);
});
