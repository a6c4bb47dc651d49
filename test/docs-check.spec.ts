import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

/**
 * `npm run docs:check` itself (scripts/docs-check.js), on test/fixtures/docs-check/: the good samples
 * and links there pass (one of them runs against Redis), and each bad one is reported at its line.
 */
const ROOT = join(__dirname, '..');

describe('docs:check', () => {
  let output = '';
  let status: number | null = null;

  beforeAll(() => {
    const run = spawnSync(process.execPath, ['scripts/docs-check.js', '--root', 'test/fixtures/docs-check'], {
      cwd: ROOT,
      encoding: 'utf8',
      env: { ...process.env, DOCS_RUN_TIMEOUT_MS: '15000' },
      timeout: 120_000,
    });
    output = `${run.stdout}${run.stderr}`;
    status = run.status;
  }, 130_000);

  it('fails, naming each broken sample, runnable sample and link by file and line, and nothing else', () => {
    expect(status).toBe(1);
    const problems = output.split('\n').filter((line) => /^(README|docs\/)\S*\.md:\d+: /.test(line));
    expect(problems).toEqual([
      'README.md:75: broken link (docs/missing.md): docs/missing.md does not exist',
      'README.md:75: broken link (docs/page.md#no-such-heading): no heading or <a id> "#no-such-heading" in docs/page.md',
      "README.md:61: sample does not compile: TS2339 at README.md:63:13: Property 'runExclusive' does not exist on type 'LockService'.",
      'README.md:66: runnable sample exited with 1',
      'README.md:70: runnable sample did not exit within 15000 ms (does it close everything it opens?)',
    ]);
    expect(output).toContain('Error: bad sample ran and failed');
  });

  it('runs the good runnable sample against Redis', () => {
    expect(output).toMatch(/ran README\.md:40 \(\d+ ms\)/);
    expect(output).toContain('docs:check samples: 6 compiled, 1 errors');
  });
});
