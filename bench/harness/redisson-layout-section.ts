import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import type { JavaRuntime } from '../workloads/redisson-java';
import type { Outcome } from './collected';
import { firstOf, nextHeading, table } from './markdown';
import { describeNetwork } from './network-mode';
import type { AdapterSummary, Summary } from './report';
import { describeRevision } from './revision';
import { fmt, median } from './stats';

/**
 * RESULTS.md's "Redisson layout: W1 and W4" (issue 33): this library in the native layout, in
 * `layout: 'redisson'`, and Java Redisson itself, side by side with ratios. Written by a run that
 * has those rows: a partial one (BENCH_WRITE=1) writes only this section, a full one rewrites it
 * with the rest; a full run without them keeps it.
 */
export const REDISSON_LAYOUT_HEADING = '## Redisson layout: W1 and W4';
const LATER_SECTIONS = ['## Real network', '## Cost per operation', '## Lock board', '## Memory per lock name', '## W6'];

export function hasRedissonLayoutRows(summary: Summary): boolean {
  return summary.adapters.some((a) => a.spec.redissonLayout);
}

const ratio = (value: number | undefined, base: number | undefined): string =>
  value === undefined || base === undefined || !Number.isFinite(value / base) ? 'n/a' : `${fmt(value / base, 2)}x`;

/** Median of a field the summary does not keep (CPU per op, the JVM's warm-up), over the runs. */
function medianOf(summary: Summary, id: string, workload: 'w1' | 'w4', field: string): number | undefined {
  const outcomes = (summary.collected.runs[id]?.[workload] ?? []) as Array<Outcome<Record<string, unknown>>>;
  const values = outcomes.flatMap((o) => (o.ok && typeof o.value[field] === 'number' ? [o.value[field] as number] : []));
  return values.length ? median(values) : undefined;
}

function javaRuntime(summary: Summary, rows: AdapterSummary[]): string | undefined {
  for (const row of rows.filter((a) => a.spec.external)) {
    for (const workload of ['w1', 'w4'] as const) {
      const outcome = (summary.collected.runs[row.spec.id]?.[workload] ?? []).find((o) => o.ok) as { value: JavaRuntime } | undefined;
      if (outcome) return `Redisson ${outcome.value.redisson} on ${outcome.value.jvm}`;
    }
  }
  return undefined;
}

export function renderRedissonLayoutSection(summary: Summary): string {
  const { collected, floors } = summary;
  const native = summary.adapters.find((a) => a.spec.reference);
  const rows = [...(native ? [native] : []), ...summary.adapters.filter((a) => a.spec.redissonLayout)];
  const live = rows.filter((a) => !a.unavailable);
  const java = live.find((a) => a.spec.external);
  const label = (a: AdapterSummary): string => (a.spec.ours ? `**${a.spec.label}**` : a.spec.label);

  const w1 = table(
    ['library', 'W1 ops/s', 'p50 / p99 ms', 'CPU µs/op (client process)', 'ops/s vs native', 'ops/s vs Java Redisson'],
    live.map((a) => [
      label(a),
      fmt(a.w1?.opsPerSec),
      a.w1 ? `${fmt(a.w1.p50Ms)} / ${fmt(a.w1.p99Ms)}` : 'failed',
      fmt(medianOf(summary, a.spec.id, 'w1', 'cpuUsPerOp')),
      ratio(a.w1?.opsPerSec, native?.w1?.opsPerSec),
      ratio(a.w1?.opsPerSec, java?.w1?.opsPerSec),
    ]),
  );
  const w4 = table(
    ['library', 'hand-offs', 'p50 / p99 ms', 'p50 vs native', 'p50 vs Java Redisson', 'p50 / PUBLISH -> message floor', 'give-ups', 'left out (waiter late)'],
    live.map((a) => [
      label(a),
      String(a.w4?.handoffs ?? 'n/a'),
      a.w4 ? `${fmt(a.w4.medianMs)} / ${fmt(a.w4.p99Ms)}` : 'failed',
      ratio(a.w4?.medianMs, native?.w4?.medianMs),
      ratio(a.w4?.medianMs, java?.w4?.medianMs),
      ratio(a.w4?.medianMs, floors.publishToMessageP50Ms),
      String(a.w4?.giveUps ?? 'n/a'),
      String(a.w4?.late ?? 'n/a'),
    ]),
  );
  const warmups = java
    ? (['w1', 'w4'] as const)
        .map((w) => `${w.toUpperCase()} ${fmt((medianOf(summary, java.spec.id, w, 'warmupMs') ?? NaN) / 1000, 2)} s (${fmt(medianOf(summary, java.spec.id, w, 'warmupOps'))} calls)`)
        .join(', ')
    : undefined;
  const unavailable = rows.filter((a) => a.unavailable).map((a) => `- ${a.spec.label}: ${a.unavailable}`);
  const failures = rows.flatMap((a) => a.failures.map((f) => `- ${a.spec.label}: ${f}`));
  const { machine, settings } = collected;
  return [
    REDISSON_LAYOUT_HEADING,
    '',
    `Measured at ${describeRevision(collected.revision)}, run of ${collected.startedAt.toISOString()}: ${describeNetwork(collected.network)}, ${settings.repetitions} repetitions, medians over them (W4: the hand-offs of all of them pooled). W1: ${settings.w1.ops.toLocaleString('en-US')} calls after ${settings.w1.warmup.toLocaleString('en-US')} of warm-up, one task, 64 cycling keys. W4: ${settings.w4.handoffs} hand-offs per repetition between two processes, holds of ${settings.w4.holdMs}-${settings.w4.holdMs + settings.w4.holdJitterMs} ms. Redis ${machine.redis}; ${machine.pinning}; Node ${machine.node}${java ? `; ${javaRuntime(summary, rows) ?? 'Java Redisson'}` : ''}. Load average (1/5/15 min) at start / end: ${machine.loadAverageAtStart} / ${machine.loadAverageAtEnd ?? '?'}.`,
    '',
    ...(warmups
      ? [`Java Redisson runs the same loops in JVMs of its own (\`interop.RedissonBench\`, test/interop/redisson-driver/), one per process, and warms their JIT up before anything is timed: uncontended calls until no compilation for ${settings.jvm.jitQuietMs / 1000} s (at most ${settings.jvm.jitMaxMs / 1000} s), medians ${warmups}; its W4 also leaves its first ${settings.jvm.warmupHandoffs} hand-offs out. Its CPU per op is the whole JVM's (Netty, JIT and GC threads included).`, '']
      : []),
    '### W1: uncontended acquire + release',
    '',
    w1,
    '',
    '### W4: hand-off latency, release in one process to acquisition in the other',
    '',
    w4,
    '',
    `Floors of the same run: ${fmt(floors.evalshaPerSec)} / ${fmt(floors.twoRoundTripOpsPerSec)} ops/s for 1 / 2 sequential EVALSHA per call; PUBLISH -> message ${fmt(floors.publishToMessageP50Ms)} ms p50; PUBLISH -> message -> one EVALSHA ${fmt(floors.wakeFloorP50Ms)} ms p50.`,
    '',
    ...(unavailable.length ? [`Not measured:\n\n${unavailable.join('\n')}`, ''] : []),
    ...(failures.length ? [`Failed runs:\n\n${failures.join('\n')}`, ''] : []),
  ].join('\n');
}

/** Replaces the previous section, or adds it before the real-network, cost, board, memory and W6 sections. */
export function writeRedissonLayoutSection(file: string, section: string): void {
  const previous = existsSync(file) ? readFileSync(file, 'utf8') : '';
  const start = previous.indexOf(`${REDISSON_LAYOUT_HEADING}\n`);
  const at = start >= 0 ? start : firstOf(previous, LATER_SECTIONS);
  const end = start >= 0 ? nextHeading(previous, start) : at;
  writeFileSync(file, `${previous.slice(0, at).trimEnd()}\n\n${section.trimEnd()}\n\n${previous.slice(end)}`.trimEnd() + '\n');
}

/** The section of `previous`, for a full run without those rows to put back (empty string when none). */
export function keptRedissonLayoutSection(previous: string): string {
  const start = previous.indexOf(`${REDISSON_LAYOUT_HEADING}\n`);
  return start >= 0 ? `\n${previous.slice(start, nextHeading(previous, start)).trimEnd()}\n` : '';
}
