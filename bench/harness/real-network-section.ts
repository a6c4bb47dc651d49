import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { firstOf, nextHeading, table } from './markdown';
import { describeNetwork } from './network-mode';
import { AdapterSummary, floorTable, Summary, w4OverPublishFloor } from './report';
import { describeRevision } from './revision';
import { REPEAT_ONLY_UNDER_MS } from './settings';
import { fmt } from './stats';

/**
 * The RESULTS.md section of a BENCH_RTT_MS run: one per round trip ("## Real network (0.5 ms RTT
 * through a delay relay)"), written by `BENCH_WRITE=1` in place of the previous one of the same RTT.
 * A full loopback run keeps every such section (they are not its figures).
 */
const HEADING_PREFIX = '## Real network (';
const MEMORY_HEADING_PREFIX = '## Memory per lock name';
const COST_HEADING_PREFIX = '## Cost per operation';
const W6_HEADING_PREFIX = '## W6';

export function realNetworkHeading(rttMs: number): string {
  return `${HEADING_PREFIX}${rttMs} ms RTT through a delay relay)`;
}

/** The columns of the workloads this run measured (a relay run is usually a subset). */
function resultTable(summary: Summary): string {
  const live = summary.adapters.filter((a) => !a.unavailable);
  const has = (pick: (a: AdapterSummary) => unknown): boolean => live.some((a) => pick(a) !== undefined);
  const columns: Array<[string, (a: AdapterSummary) => string]> = [];
  if (has((a) => a.w1)) columns.push(['W1 ops/s (p50 / p99 ms)', (a) => (a.w1 ? `${fmt(a.w1.opsPerSec)} (${fmt(a.w1.p50Ms)} / ${fmt(a.w1.p99Ms)})` : 'failed')]);
  if (has((a) => a.w2)) columns.push(['W2 ops/s', (a) => (a.w2 ? fmt(a.w2.opsPerSec) : 'failed')]);
  if (has((a) => a.w3)) {
    columns.push(['W3 hand-offs/s', (a) => (a.w3 ? fmt(a.w3.handoffsPerSec) : 'failed')]);
    columns.push(['W3 wait p50 / p99 ms', (a) => (a.w3 ? `${fmt(a.w3.waitP50Ms)} / ${fmt(a.w3.waitP99Ms)}` : 'failed')]);
    columns.push(['W3 fairness', (a) => (a.w3 ? fmt(a.w3.fairness, 2) : 'failed')]);
    columns.push(['W3 safety', (a) => (a.w3 ? (a.w3.safe ? 'ok' : `**UNSAFE: ${a.w3.lostUpdates} lost, ${a.w3.overlaps} overlaps**`) : 'failed')]);
  }
  if (has((a) => a.w4)) {
    columns.push(['W4 hand-off p50 / p99 ms', (a) => (a.w4 ? `${fmt(a.w4.medianMs)} / ${fmt(a.w4.p99Ms)}` : 'failed')]);
    columns.push(['W4 p50 / PUBLISH -> message p50', (a) => w4OverPublishFloor(a, summary.floors)]);
  }
  if (has((a) => a.w5)) columns.push(['W5 drain ms', (a) => (a.w5 ? fmt(a.w5.drainMs) : 'failed')]);
  return table(
    ['library', ...columns.map(([header]) => header)],
    live.map((a) => [a.spec.ours ? `**${a.spec.label}**` : a.spec.label, ...columns.map(([, cell]) => cell(a))]),
  );
}

/** "W1 1, W3 3, W4 3": runs per adapter of each workload (a run over 10 s is not repeated). */
function runsPerWorkload(collected: Summary['collected']): string {
  const counts = new Map<string, number[]>();
  for (const runs of Object.values(collected.runs)) {
    for (const [workload, outcomes] of Object.entries(runs)) counts.set(workload, [...(counts.get(workload) ?? []), outcomes?.length ?? 0]);
  }
  return [...counts]
    .map(([workload, n]) => {
      const [low, high] = [Math.min(...n), Math.max(...n)];
      return `${workload.toUpperCase()} ${low === high ? low : `${low}-${high}`}`;
    })
    .join(', ');
}

export function renderRealNetworkSection(summary: Summary): string {
  const { collected } = summary;
  const network = collected.network;
  if (network?.kind !== 'relay') throw new Error('a real-network section needs a BENCH_RTT_MS run');
  const failures = summary.adapters.flatMap((a) => a.failures.map((f) => `- ${a.spec.label}: ${f}`));
  return [
    realNetworkHeading(network.rttMs),
    '',
    `Measured at ${describeRevision(collected.revision)}, run of ${collected.startedAt.toISOString()}: ${describeNetwork(network)}, ${collected.settings.repetitions} repetitions; runs per adapter: ${runsPerWorkload(collected)} (a run that took over ${REPEAT_ONLY_UNDER_MS / 1000} s is not repeated), medians over runs, W4 pooled. Every adapter, workload and floor connects through the relay; only the harness's FLUSHALL between runs and the "no relay" PING floor go straight to redis-server. ${collected.machine.pinning}. Load average (1/5/15 min) at start / end: ${collected.machine.loadAverageAtStart} / ${collected.machine.loadAverageAtEnd ?? '?'}.`,
    '',
    resultTable(summary),
    '',
    floorTable(summary.floors, true),
    '',
    failures.length ? `Failed runs:\n\n${failures.join('\n')}\n` : '',
  ].join('\n');
}

/** Replaces the section of the same RTT, or adds it before the cost, memory and W6 sections. */
export function writeRealNetworkSection(file: string, section: string): void {
  const previous = existsSync(file) ? readFileSync(file, 'utf8') : '';
  const heading = section.slice(0, section.indexOf('\n'));
  const start = previous.indexOf(`${heading}\n`);
  const at = start >= 0 ? start : firstOf(previous, [COST_HEADING_PREFIX, MEMORY_HEADING_PREFIX, W6_HEADING_PREFIX]);
  const end = start >= 0 ? nextHeading(previous, start) : at;
  writeFileSync(file, `${previous.slice(0, at).trimEnd()}\n\n${section.trimEnd()}\n\n${previous.slice(end)}`.trimEnd() + '\n');
}

/** Every real-network section of `previous`, for a full run to put back (empty string when none). */
export function keptRealNetworkSections(previous: string): string {
  const sections: string[] = [];
  for (let start = previous.indexOf(HEADING_PREFIX); start >= 0; start = previous.indexOf(HEADING_PREFIX, start + 1)) {
    sections.push(previous.slice(start, nextHeading(previous, start)).trimEnd());
  }
  return sections.map((section) => `\n${section}\n`).join('');
}
