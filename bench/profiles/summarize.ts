/**
 * Summarizes a `node --cpu-prof` profile: self time per function (file:function), the top `n`.
 *
 *   node dist/bench/profiles/summarize.js <file.cpuprofile> [fromUs toUs] [n]
 *
 * `fromUs toUs` (the cost worker's `windowUs`, on the monotonic clock the profile's timestamps use)
 * keeps only the samples of the measured window, so start-up and warm-up are left out. Files are
 * shown relative to the repository (`lib/...`), node_modules as `<package>/<file>`, Node's own as
 * `node:<module>`.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

const REPO = join(__dirname, '..', '..', '..');

function place(url: string): string {
  if (!url) return '(native)';
  let path = url.replace(/^file:\/\//, '');
  const modules = path.lastIndexOf('/node_modules/');
  if (modules >= 0) return path.slice(modules + '/node_modules/'.length).replace(/\/(dist|built|lib|build)\//, '/');
  if (path.startsWith(REPO)) path = path.slice(REPO.length + 1);
  if (path.startsWith('/work/')) path = path.split('/').slice(3).join('/');
  return path.startsWith('node:') ? path : path.replace(/^dist\//, '');
}

export function summarize(profile: Profile, from?: number, to?: number): { rows: Array<[string, number]>; totalUs: number; idleUs: number } {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const self = new Map<string, number>();
  let t = profile.startTime;
  let total = 0;
  let idle = 0;
  profile.samples.forEach((id, i) => {
    t += profile.timeDeltas[i];
    if (from !== undefined && to !== undefined && (t < from || t > to)) return;
    const delta = profile.timeDeltas[i + 1] ?? 0;
    const frame = byId.get(id)!.callFrame;
    if (frame.functionName === '(idle)') {
      idle += delta;
      return;
    }
    total += delta;
    const key = frame.url ? `${place(frame.url)}:${frame.functionName || '(anonymous)'}` : frame.functionName || '(anonymous)';
    self.set(key, (self.get(key) ?? 0) + delta);
  });
  return { rows: [...self].sort((a, b) => b[1] - a[1]), totalUs: total, idleUs: idle };
}

/** Self time by file (library, ioredis, Nest, Node internals...), for a coarse split. */
export function byArea(rows: Array<[string, number]>): Array<[string, number]> {
  const areas = new Map<string, number>();
  for (const [key, us] of rows) {
    const file = key.includes(':') && !key.startsWith('(') ? key.slice(0, key.lastIndexOf(':')) : key;
    const area = file.startsWith('lib/') ? file : file.startsWith('node:') ? 'node: (Node internals)' : file.startsWith('(') ? file : file.split('/')[0];
    areas.set(area, (areas.get(area) ?? 0) + us);
  }
  return [...areas].sort((a, b) => b[1] - a[1]);
}

if (require.main === module) {
  const [file, fromArg, toArg, nArg] = process.argv.slice(2);
  if (!file) throw new Error('usage: summarize.js <file.cpuprofile> [fromUs toUs] [n]');
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const from = fromArg ? Number(fromArg) : undefined;
  const to = toArg ? Number(toArg) : undefined;
  const n = nArg ? Number(nArg) : 25;
  const { rows, totalUs, idleUs } = summarize(profile, from, to);
  const pct = (us: number): string => `${((100 * us) / totalUs).toFixed(1)}%`;
  process.stdout.write(`busy ${(totalUs / 1000).toFixed(0)} ms, idle ${(idleUs / 1000).toFixed(0)} ms\n\n`);
  process.stdout.write('| function (file:function) | self ms | self % of busy |\n| :-- | --: | --: |\n');
  for (const [key, us] of rows.slice(0, n)) process.stdout.write(`| \`${key}\` | ${(us / 1000).toFixed(1)} | ${pct(us)} |\n`);
  process.stdout.write('\n| area (file or package) | self ms | self % of busy |\n| :-- | --: | --: |\n');
  for (const [area, us] of byArea(rows).slice(0, 20)) process.stdout.write(`| \`${area}\` | ${(us / 1000).toFixed(1)} | ${pct(us)} |\n`);
}
