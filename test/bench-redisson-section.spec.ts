import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { keptRedissonLayoutSection, REDISSON_LAYOUT_HEADING, writeRedissonLayoutSection } from '../bench/harness/redisson-layout-section';

/**
 * bench/RESULTS.md's "Redisson layout: W1 and W4" section: a partial run writes it without touching
 * the main tables, in place of its previous version, and a full run without those rows keeps it.
 */
describe('the Redisson-layout section of bench/RESULTS.md', () => {
  let dir: string;
  let file: string;
  const main = '# Benchmark results\n\n## Results\n\nthe main tables\n';
  const later = '## Real network (0.5 ms RTT through a delay relay)\n\nrelay figures\n\n## Cost per operation\n\ncost figures\n';
  const section = (figure: string): string => `${REDISSON_LAYOUT_HEADING}\n\n### W1: uncontended acquire + release\n\n${figure}\n`;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'bench-section-'));
    file = join(dir, 'RESULTS.md');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('goes before the real-network and cost sections the first time, the rest untouched', () => {
    writeFileSync(file, `${main}\n${later}`);
    writeRedissonLayoutSection(file, section('first'));
    expect(readFileSync(file, 'utf8')).toBe(`${main}\n${section('first')}\n${later}`);
  });

  it('replaces its previous version, subsections included, and only it', () => {
    writeFileSync(file, `${main}\n${section('first')}\n${later}`);
    writeRedissonLayoutSection(file, section('second'));
    const text = readFileSync(file, 'utf8');
    expect(text).toBe(`${main}\n${section('second')}\n${later}`);
    expect(text).not.toContain('first');
  });

  it('is kept for a full run without those rows, up to the next section', () => {
    expect(keptRedissonLayoutSection(`${main}\n${section('first')}\n${later}`)).toBe(`\n${section('first')}`);
    expect(keptRedissonLayoutSection(`${main}\n${later}`)).toBe('');
  });
});
