import { ADAPTERS } from '../adapters';
import { AdapterSpec, measures } from '../adapters/adapter';
import type { Collected, Outcome, WorkloadResults } from './collected';
import type { W5Result } from '../workloads/w5-many-waiters';
import { table } from './markdown';
import { describeNetwork } from './network-mode';
import { REPEAT_ONLY_UNDER_MS, WORKLOADS, WorkloadId } from './settings';
import { fmt, median, percentile } from './stats';

/** Medians over the repetitions of one adapter (W4: every hand-off of every repetition pooled). */
export interface AdapterSummary {
  readonly spec: AdapterSpec;
  readonly unavailable?: string;
  readonly failures: string[];
  w1?: { opsPerSec: number; p50Ms: number; p99Ms: number };
  w2?: { opsPerSec: number; cpuUsPerOp: number; redisCpuUsPerOp: number };
  w3?: {
    handoffsPerSec: number;
    acquisitionsPerSec: number;
    waitP50Ms: number;
    waitP99Ms: number;
    fairness: number;
    minPerTask: number;
    maxPerTask: number;
    giveUps: number;
    lostUpdates: number;
    overlaps: number;
    safe: boolean;
  };
  w4?: { handoffs: number; medianMs: number; p99Ms: number; giveUps: number; late: number; repetitions: number };
  w5?: W5Summary;
  w5x?: W5Summary;
}

export interface W5Summary {
    drainMs: number;
    drained: number;
    waiters: number;
    sentPerHandoff: number;
    redisCallsPerHandoff: number;
    pollsPerWaiterSec: number;
    connections: number;
    repetitions: number;
    subscriberConnections: number;
    giveUps: number;
    heapPerWaiterBytes: number;
    peakHeapPerWaiterBytes: number;
    msPerHandoff: number;
}

export interface FloorSummary {
  cliIdleRttMs: number;
  pingP50Ms: number;
  pingP99Ms: number;
  evalshaP50Ms: number;
  evalshaPerSec: number;
  /** W1's floor: one acquire and one release, each one sequential EVALSHA. */
  twoRoundTripOpsPerSec: number;
  publishToMessageP50Ms: number;
  publishToMessageP99Ms: number;
  /** Relay mode: PING straight to redis-server, without the relay (NaN on loopback). */
  directPingP50Ms: number;
  directPingP99Ms: number;
  wakeFloorP50Ms: number;
  wakeFloorP99Ms: number;
}

export interface TargetCheck {
  readonly target: string;
  readonly measured: string;
  readonly met: boolean | undefined;
}

export interface Summary {
  readonly collected: Collected;
  readonly floors: FloorSummary;
  readonly adapters: AdapterSummary[];
  readonly reference: AdapterSummary | undefined;
  readonly targets: TargetCheck[];
  readonly safetyFailures: string[];
}

function oks<T>(outcomes: Array<Outcome<T>> | undefined): T[] {
  return (outcomes ?? []).flatMap((outcome) => (outcome.ok ? [outcome.value] : []));
}

/** Median of a figure over repetitions; a repetition that could not measure it (NaN) is left out. */
const med = <T>(values: T[], pick: (value: T) => number): number => median(values.map(pick).filter((v) => Number.isFinite(v)));
const total = <T>(values: T[], pick: (value: T) => number): number => values.reduce((sum, value) => sum + pick(value), 0);

function summarizeAdapter(collected: Collected, spec: AdapterSpec): AdapterSummary {
  const runs = collected.runs[spec.id] ?? {};
  const failures: string[] = [];
  for (const workload of WORKLOADS) {
    for (const outcome of (runs[workload] ?? []) as Array<Outcome<unknown>>) {
      if (!outcome.ok) failures.push(`${workload}: ${outcome.error.split('\n')[0]}`);
    }
  }
  const summary: AdapterSummary = { spec, unavailable: collected.unavailable[spec.id], failures };
  const w1 = oks(runs.w1);
  if (w1.length) summary.w1 = { opsPerSec: med(w1, (r) => r.opsPerSec), p50Ms: med(w1, (r) => r.p50Ms), p99Ms: med(w1, (r) => r.p99Ms) };
  const w2 = oks(runs.w2);
  if (w2.length) {
    summary.w2 = { opsPerSec: med(w2, (r) => r.opsPerSec), cpuUsPerOp: med(w2, (r) => r.cpuUsPerOp), redisCpuUsPerOp: med(w2, (r) => r.redisCpuUsPerOp) };
  }
  const w3 = oks(runs.w3);
  if (w3.length) {
    summary.w3 = {
      handoffsPerSec: med(w3, (r) => r.handoffsPerSec),
      acquisitionsPerSec: med(w3, (r) => r.acquisitionsPerSec),
      waitP50Ms: med(w3, (r) => r.waitP50Ms),
      waitP99Ms: med(w3, (r) => r.waitP99Ms),
      fairness: med(w3, (r) => r.fairness),
      minPerTask: med(w3, (r) => r.minPerTask),
      maxPerTask: med(w3, (r) => r.maxPerTask),
      giveUps: total(w3, (r) => r.giveUps),
      lostUpdates: total(w3, (r) => r.lostUpdates),
      overlaps: total(w3, (r) => r.overlaps),
      safe: w3.every((r) => r.safe),
    };
  }
  const w4 = oks(runs.w4);
  if (w4.length) {
    const pooled = w4.flatMap((r) => r.latenciesMs);
    summary.w4 = {
      handoffs: pooled.length,
      medianMs: median(pooled),
      p99Ms: percentile(pooled, 99),
      giveUps: total(w4, (r) => r.giveUps),
      late: total(w4, (r) => r.late),
      repetitions: w4.length,
    };
  }
  summary.w5 = summarizeW5(oks(runs.w5));
  summary.w5x = summarizeW5(oks(runs.w5x));
  return summary;
}

function summarizeW5(w5: W5Result[]): W5Summary | undefined {
  if (w5.length === 0) return undefined;
  return {
    drainMs: med(w5, (r) => r.drainMs),
    drained: Math.min(...w5.map((r) => r.drained)),
    waiters: w5[0].waiters,
    sentPerHandoff: med(w5, (r) => r.sentPerHandoff),
    redisCallsPerHandoff: med(w5, (r) => r.redisCallsPerHandoff),
    pollsPerWaiterSec: med(w5, (r) => r.pollsPerWaiterSec),
    repetitions: w5.length,
    connections: Math.max(...w5.map((r) => r.connections.total)),
    subscriberConnections: Math.max(...w5.map((r) => r.connections.subscribers)),
    giveUps: total(w5, (r) => r.giveUps),
    heapPerWaiterBytes: med(w5, (r) => r.heapPerWaiterBytes ?? NaN),
    peakHeapPerWaiterBytes: med(w5, (r) => r.peakHeapPerWaiterBytes ?? NaN),
    msPerHandoff: med(w5, (r) => r.msPerHandoff ?? r.drainMs / Math.max(1, r.drained)),
  };
}

function summarizeFloors(collected: Collected): FloorSummary {
  const { roundTrips, wake, cliLatency, directRoundTrips = [] } = collected.floors;
  const evalshaPerSec = med(roundTrips, (r) => r.evalshaPerSec);
  return {
    cliIdleRttMs: med(cliLatency, (r) => r.avgMs),
    pingP50Ms: med(roundTrips, (r) => r.pingP50Ms),
    pingP99Ms: med(roundTrips, (r) => r.pingP99Ms),
    evalshaP50Ms: med(roundTrips, (r) => r.evalshaP50Ms),
    evalshaPerSec,
    twoRoundTripOpsPerSec: evalshaPerSec / 2,
    publishToMessageP50Ms: med(wake, (r) => r.publishToMessageP50Ms),
    publishToMessageP99Ms: med(wake, (r) => r.publishToMessageP99Ms ?? NaN),
    directPingP50Ms: med(directRoundTrips, (r) => r.pingP50Ms),
    directPingP99Ms: med(directRoundTrips, (r) => r.pingP99Ms),
    wakeFloorP50Ms: med(wake, (r) => r.wakeFloorP50Ms),
    wakeFloorP99Ms: med(wake, (r) => r.wakeFloorP99Ms),
  };
}

const x = (value: number): string => `${fmt(value)}x`;

function checkTargets(floors: FloorSummary, adapters: AdapterSummary[], ours: AdapterSummary | undefined): TargetCheck[] {
  const peer = (id: string): AdapterSummary | undefined => adapters.find((a) => a.spec.id === id);
  const checks: TargetCheck[] = [];
  const add = (target: string, measured: string, met: boolean | undefined): void => {
    checks.push({ target, measured, met });
  };
  const o4 = ours?.w4?.medianMs;
  add(
    'W4 median hand-off <= 1.3x the pub/sub wake floor',
    `${fmt(o4)} ms vs floor ${fmt(floors.wakeFloorP50Ms)} ms = ${x((o4 ?? NaN) / floors.wakeFloorP50Ms)}`,
    o4 === undefined ? undefined : o4 <= 1.3 * floors.wakeFloorP50Ms,
  );
  for (const [id, factor] of [['redlock-default', 50], ['semaphore', 3]] as const) {
    const theirs = peer(id)?.w4?.medianMs;
    add(
      `W4 >= ${factor}x faster than ${peer(id)?.spec.label ?? id}`,
      `${fmt(theirs)} ms / ${fmt(o4)} ms = ${x((theirs ?? NaN) / (o4 ?? NaN))}`,
      theirs === undefined || o4 === undefined ? undefined : theirs / o4 >= factor,
    );
  }
  const o3 = ours?.w3;
  add('W3 zero lost updates and overlaps (this library)', o3 ? `${o3.lostUpdates} lost, ${o3.overlaps} overlaps` : 'n/a', o3 ? o3.safe : undefined);
  const peers3 = adapters.filter((a) => !a.spec.ours && a.w3);
  const bestPeer = peers3.reduce<AdapterSummary | undefined>((best, a) => (!best || a.w3!.handoffsPerSec > best.w3!.handoffsPerSec ? a : best), undefined);
  add(
    'W3 real hand-offs/s above every peer variant',
    `${fmt(o3?.handoffsPerSec)}/s vs best peer ${bestPeer?.spec.label ?? 'n/a'} ${fmt(bestPeer?.w3?.handoffsPerSec)}/s`,
    o3 && bestPeer ? o3.handoffsPerSec > bestPeer.w3!.handoffsPerSec : undefined,
  );
  add('W3 fairness (min/max acquisitions per task) >= 0.7', o3 ? `${fmt(o3.fairness, 2)} (${o3.minPerTask}/${o3.maxPerTask})` : 'n/a', o3 ? o3.fairness >= 0.7 : undefined);
  // One round trip per locked call: `run` resolves once the body settled, its release not awaited.
  const o1 = ours?.w1?.opsPerSec;
  const semaphore1 = peer('semaphore')?.w1?.opsPerSec;
  add(
    'W1 through run >= 1.25x redis-semaphore Mutex',
    `${fmt(o1)} / ${fmt(semaphore1)} ops/s = ${x((o1 ?? NaN) / (semaphore1 ?? NaN))}`,
    o1 === undefined || semaphore1 === undefined ? undefined : o1 >= 1.25 * semaphore1,
  );
  add(
    'W1 through run >= 0.5x the one-script floor (sequential EVALSHA)',
    `${fmt(o1)} / ${fmt(floors.evalshaPerSec)} ops/s = ${x((o1 ?? NaN) / floors.evalshaPerSec)}`,
    o1 === undefined ? undefined : o1 >= 0.5 * floors.evalshaPerSec,
  );
  const pair1 = peer('ours-trylock')?.w1?.opsPerSec;
  add(
    'W1 tryLock + unlock >= 0.85x redis-semaphore Mutex',
    `${fmt(pair1)} / ${fmt(semaphore1)} ops/s = ${x((pair1 ?? NaN) / (semaphore1 ?? NaN))}`,
    pair1 === undefined || semaphore1 === undefined ? undefined : pair1 >= 0.85 * semaphore1,
  );
  const o2 = ours?.w2?.opsPerSec;
  const peers2 = adapters.filter((a) => !a.spec.ours && a.w2);
  const bestPeer2 = peers2.reduce<AdapterSummary | undefined>((best, a) => (!best || a.w2!.opsPerSec > best.w2!.opsPerSec ? a : best), undefined);
  add(
    'W2 through run level with the best peer variant or ahead (>= 0.97x)',
    `${fmt(o2)} ops/s vs best peer ${bestPeer2?.spec.label ?? 'n/a'} ${fmt(bestPeer2?.w2?.opsPerSec)} ops/s`,
    o2 === undefined || !bestPeer2 ? undefined : o2 >= 0.97 * bestPeer2.w2!.opsPerSec,
  );
  const decorator = peer('ours-decorator');
  const d1 = decorator?.w1?.opsPerSec;
  const d2 = decorator?.w2?.opsPerSec;
  add(
    '@DistributedLock within 10% of LockService.run on W1 and W2',
    `W1 ${x((d1 ?? NaN) / (o1 ?? NaN))}, W2 ${x((d2 ?? NaN) / (o2 ?? NaN))}`,
    d1 === undefined || d2 === undefined || o1 === undefined || o2 === undefined ? undefined : d1 >= 0.9 * o1 && d2 >= 0.9 * o2,
  );
  const o5 = ours?.w5;
  add(
    'W5 one subscriber connection, bounded commands per hand-off (all drained)',
    o5 ? `${o5.subscriberConnections} subscriber of ${o5.connections} connections, ${fmt(o5.sentPerHandoff)} sent / ${fmt(o5.redisCallsPerHandoff)} run per hand-off, ${o5.drained}/${o5.waiters} drained` : 'n/a',
    o5 ? o5.subscriberConnections === 1 && o5.sentPerHandoff <= 6 && o5.drained === o5.waiters : undefined,
  );
  const o5x = ours?.w5x;
  add(
    `W5x (${o5x ? o5x.waiters.toLocaleString('en-US') : '20,000'} waiters, one process, one key): heap per waiter < 2 KB`,
    o5x
      ? `${fmt(o5x.heapPerWaiterBytes)} bytes per waiter live with all of them waiting (${o5?.waiters ?? 'n/a'} waiters: ${fmt(o5?.heapPerWaiterBytes)}); sampled peak, garbage included: ${fmt(o5x.peakHeapPerWaiterBytes)}`
      : 'n/a',
    o5x ? o5x.heapPerWaiterBytes < 2048 : undefined,
  );
  add(
    'W5x hand-off time flat as waiters grow: ms per hand-off at 20,000 within 1.5x of at 1000 (all drained)',
    o5x && o5 ? `${fmt(o5x.msPerHandoff, 3)} ms vs ${fmt(o5.msPerHandoff, 3)} ms = ${x(o5x.msPerHandoff / o5.msPerHandoff)}, ${o5x.drained}/${o5x.waiters} drained` : 'n/a',
    o5x && o5 ? o5x.msPerHandoff <= 1.5 * o5.msPerHandoff && o5x.drained === o5x.waiters : undefined,
  );
  return checks;
}

export function summarize(collected: Collected): Summary {
  const floors = summarizeFloors(collected);
  const adapters = ADAPTERS.filter((spec) => spec.id in collected.runs || spec.id in collected.unavailable).map((spec) =>
    summarizeAdapter(collected, spec),
  );
  const reference = adapters.find((a) => a.spec.reference && !a.unavailable);
  const safetyFailures = adapters
    .filter((a) => a.w3 && !a.w3.safe)
    .map((a) => `${a.spec.label}: ${a.w3!.lostUpdates} lost updates, ${a.w3!.overlaps} overlapping holders in W3`);
  return { collected, floors, adapters, reference, targets: checkTargets(floors, adapters, reference), safetyFailures };
}

/** The table the README quotes: one row per library variant, the headline figure of each workload. */
export function headlineTable(summary: Summary): string {
  const rows = summary.adapters.map((a) => {
    if (a.unavailable) return [a.spec.label, ...new Array(8).fill(a.unavailable.startsWith('unavailable') ? 'unavailable' : 'pending')];
    // A row that measures only some workloads (Java Redisson: W1, W4) says so in the others.
    const missing = (workload: WorkloadId): string => (measures(a.spec, workload) ? 'failed' : 'not measured');
    return [
      a.spec.ours ? `**${a.spec.label}**` : a.spec.label,
      a.w1 ? `${fmt(a.w1.opsPerSec)} (${fmt(a.w1.p50Ms)} ms)` : missing('w1'),
      a.w2 ? fmt(a.w2.opsPerSec) : missing('w2'),
      a.w3 ? fmt(a.w3.handoffsPerSec) : missing('w3'),
      a.w3 ? fmt(a.w3.fairness, 2) : missing('w3'),
      a.w3 ? (a.w3.safe ? 'ok' : `**UNSAFE: ${a.w3.lostUpdates} lost**`) : missing('w3'),
      a.w4 ? `${fmt(a.w4.medianMs)} / ${fmt(a.w4.p99Ms)}` : missing('w4'),
      a.w5 ? `${fmt(a.w5.drainMs)}${a.w5.drained < a.w5.waiters ? ` (${a.w5.drained}/${a.w5.waiters} drained)` : ''}` : missing('w5'),
      a.w5 ? `${fmt(a.w5.sentPerHandoff)} / ${a.w5.connections} (${a.w5.subscriberConnections} sub)` : missing('w5'),
    ];
  });
  return table(
    [
      'library',
      'W1 ops/s (p50)',
      'W2 ops/s',
      'W3 hand-offs/s',
      'W3 fairness',
      'W3 safety',
      'W4 hand-off p50 / p99 ms',
      'W5 drain ms',
      'W5 cmds/hand-off / conns',
    ],
    rows,
  );
}

function ratioTable(summary: Summary): string {
  const ours = summary.reference;
  const ratio = (value: number | undefined, base: number | undefined): string =>
    value === undefined || base === undefined ? 'n/a' : x(value / base);
  const rows = summary.adapters
    .filter((a) => !a.unavailable)
    .map((a) => [
      a.spec.label,
      ratio(ours?.w1?.opsPerSec, a.w1?.opsPerSec),
      ratio(ours?.w2?.opsPerSec, a.w2?.opsPerSec),
      ratio(ours?.w3?.handoffsPerSec, a.w3?.handoffsPerSec),
      ratio(a.w4?.medianMs, ours?.w4?.medianMs),
      ratio(a.w5?.drainMs, ours?.w5?.drainMs),
    ]);
  return table(['library', 'W1 ops/s', 'W2 ops/s', 'W3 hand-offs/s', 'W4 hand-off time', 'W5 drain time'], rows);
}

/** W4's median hand-off over the PUBLISH -> message floor: how far above one pub/sub notification. */
export function w4OverPublishFloor(a: AdapterSummary, floors: FloorSummary): string {
  return a.w4 ? x(a.w4.medianMs / floors.publishToMessageP50Ms) : 'n/a';
}

export function floorTable(floors: FloorSummary, relay: boolean): string {
  const via = relay ? ' (through the relay)' : '';
  const direct: string[][] = relay
    ? [['PING round trip straight to redis-server (no relay), p50 / p99', `${fmt(floors.directPingP50Ms)} / ${fmt(floors.directPingP99Ms)} ms`]]
    : [];
  return table(
    ['floor (same Redis, same run)', 'value'],
    [
      [`\`redis-cli --latency\` (idle client, 10 ms apart${relay ? ', through the relay' : ''}), avg`, `${fmt(floors.cliIdleRttMs)} ms`],
      [`PING round trip, back to back from Node${via}, p50 / p99`, `${fmt(floors.pingP50Ms)} / ${fmt(floors.pingP99Ms)} ms`],
      ...direct,
      ['EVALSHA (trivial script) back to back, p50', `${fmt(floors.evalshaP50Ms)} ms`],
      ['sequential EVALSHA rate', `${fmt(floors.evalshaPerSec)} /s`],
      ['W1 floors: 1 / 2 sequential EVALSHA per locked call', `${fmt(floors.evalshaPerSec)} / ${fmt(floors.twoRoundTripOpsPerSec)} ops/s`],
      [`PUBLISH -> message in a subscriber process idle for 10-20 ms${relay ? ', both through the relay' : ''}, p50 / p99`, `${fmt(floors.publishToMessageP50Ms)} / ${fmt(floors.publishToMessageP99Ms)} ms`],
      ['pub/sub wake floor: PUBLISH -> message -> one EVALSHA, p50 / p99 (measured right before this library\'s W4)', `${fmt(floors.wakeFloorP50Ms)} / ${fmt(floors.wakeFloorP99Ms)} ms`],
    ],
    1,
  );
}

function detailTables(summary: Summary): string {
  const live = summary.adapters.filter((a) => !a.unavailable);
  const w3 = table(
    ['library', 'hand-offs/s', 'acquisitions/s', 'wait p50 / p99 ms', 'per task min / max', 'give-ups', 'lost updates', 'overlaps'],
    live.map((a) => [
      a.spec.label,
      fmt(a.w3?.handoffsPerSec),
      fmt(a.w3?.acquisitionsPerSec),
      `${fmt(a.w3?.waitP50Ms)} / ${fmt(a.w3?.waitP99Ms)}`,
      a.w3 ? `${a.w3.minPerTask} / ${a.w3.maxPerTask}` : 'n/a',
      String(a.w3?.giveUps ?? 'n/a'),
      String(a.w3?.lostUpdates ?? 'n/a'),
      String(a.w3?.overlaps ?? 'n/a'),
    ]),
  );
  const w4 = table(
    ['library', 'hand-offs', 'median ms', 'p99 ms', 'median / PUBLISH -> message floor', 'give-ups', 'left out (waiter late)', 'repetitions'],
    live.map((a) => [
      a.spec.label,
      String(a.w4?.handoffs ?? 'n/a'),
      fmt(a.w4?.medianMs),
      fmt(a.w4?.p99Ms),
      w4OverPublishFloor(a, summary.floors),
      String(a.w4?.giveUps ?? 'n/a'),
      String(a.w4?.late ?? 'n/a'),
      String(a.w4?.repetitions ?? 'n/a'),
    ]),
  );
  const w5 = table(
    ['library', 'drain ms', 'drained', 'sent / hand-off', 'run by Redis / hand-off', 'sent per waiter per s while waiting', 'connections (subscriber)', 'give-ups', 'repetitions'],
    live.map((a) => [
      a.spec.label,
      fmt(a.w5?.drainMs),
      a.w5 ? `${a.w5.drained}/${a.w5.waiters}` : 'n/a',
      fmt(a.w5?.sentPerHandoff),
      fmt(a.w5?.redisCallsPerHandoff),
      fmt(a.w5?.pollsPerWaiterSec),
      a.w5 ? `${a.w5.connections} (${a.w5.subscriberConnections})` : 'n/a',
      String(a.w5?.giveUps ?? 'n/a'),
      String(a.w5?.repetitions ?? 'n/a'),
    ]),
  );
  const scaled = live.filter((a) => a.w5x);
  const w5x = table(
    ['library', 'waiters', 'drain ms', 'drained', 'ms per hand-off (at 1000)', 'live heap per waiter, bytes (at 1000)', 'sampled peak heap per waiter, bytes', 'sent / hand-off', 'give-ups (asked again)'],
    scaled.map((a) => [
      a.spec.label,
      fmt(a.w5x!.waiters),
      fmt(a.w5x!.drainMs),
      `${a.w5x!.drained}/${a.w5x!.waiters}`,
      `${fmt(a.w5x!.msPerHandoff, 3)} (${fmt(a.w5?.msPerHandoff, 3)})`,
      `${fmt(a.w5x!.heapPerWaiterBytes)} (${fmt(a.w5?.heapPerWaiterBytes)})`,
      fmt(a.w5x!.peakHeapPerWaiterBytes),
      fmt(a.w5x!.sentPerHandoff),
      String(a.w5x!.giveUps),
    ]),
  );
  const w1 = table(
    ['library', 'W1 ops/s', 'W1 p50 ms', 'W1 p99 ms', 'W2 ops/s', 'W2 CPU us/op: Node', 'W2 CPU us/op: Redis'],
    live.map((a) => [
      a.spec.label,
      fmt(a.w1?.opsPerSec),
      fmt(a.w1?.p50Ms),
      fmt(a.w1?.p99Ms),
      fmt(a.w2?.opsPerSec),
      fmt(a.w2?.cpuUsPerOp),
      fmt(a.w2?.redisCpuUsPerOp),
    ]),
  );
  return [
    '### W1 / W2: uncontended',
    w1,
    '### W3: contended, 4 processes x 8 tasks, one key',
    w3,
    '### W4: hand-off latency across processes',
    w4,
    '### W5: 1000 waiters in one process, one key',
    w5,
    '### W5x: 20,000 waiters in one process, one key (this library only)',
    'Live heap: the V8 heap once every waiter waits over the heap before they started, both right after a full GC, per waiter: everything a waiting caller costs, the workload\'s own frames included. The sampled peak is the highest heap seen every 20 ms while they started, garbage not yet collected included. Waiters ask with the module\'s 5 s `defaultWaitTime` and ask again when it runs out (give-ups).',
    scaled.length ? w5x : '(not run)',
  ].join('\n\n');
}

function targetTable(summary: Summary): string {
  return table(
    ['target', 'measured', 'met'],
    summary.targets.map((t) => [t.target, t.measured, t.met === undefined ? 'n/a' : t.met ? 'yes' : '**NO**']),
    2,
  );
}

function settingsTable(summary: Summary): string {
  return table(
    ['library', 'settings'],
    summary.adapters.map((a) => [a.spec.label, a.unavailable ? `${a.spec.settings} (**${a.unavailable}**)` : a.spec.settings]),
    2,
  );
}

/** The console report and the body of RESULTS.md. */
export function renderReport(summary: Summary): string {
  const { collected } = summary;
  const { machine, settings } = collected;
  const minutes = collected.finishedAt ? ((collected.finishedAt.getTime() - collected.startedAt.getTime()) / 60000).toFixed(1) : '?';
  const failures = summary.adapters.flatMap((a) => a.failures.map((f) => `- ${a.spec.label}: ${f}`));
  const safety = summary.safetyFailures.length
    ? [`> **SAFETY FAILURE** (lost updates / two holders at once):\n${summary.safetyFailures.map((f) => `> - ${f}`).join('\n')}`, '']
    : [];
  return [
    ...safety,
    `Run of ${collected.startedAt.toISOString()} (${minutes} min), ${settings.repetitions} repetitions, every adapter and workload in fresh processes. Medians over repetitions; W4 pools the hand-offs of all its repetitions.`,
    '',
    `Network: ${describeNetwork(collected.network)}.`,
    '',
    '## Results',
    '',
    headlineTable(summary),
    '',
    'W1: one task, acquire+release on distinct keys. W2: 64 tasks, distinct keys. W3: 4 processes x 8 tasks on one key, GET/SET+1 inside; hand-offs = owner changes; fairness = min/max acquisitions per task. W4: release in one process to acquire in another. W5: 1000 waiters in one process; commands = sent by the process per hand-off; conns = connections to Redis (subscriber mode).',
    '',
    '## Ratios: this library (LockService.run) against each row',
    '',
    'Above 1x means this library is ahead (W1-W3: its rate / theirs; W4, W5: their time / its time).',
    '',
    ratioTable(summary),
    '',
    '## Floors',
    '',
    floorTable(summary.floors, collected.network?.kind === 'relay'),
    '',
    '## Targets',
    '',
    targetTable(summary),
    '',
    '## Details',
    '',
    detailTables(summary),
    '',
    failures.length ? `### Failed runs\n\n${failures.join('\n')}\n` : '',
    '## Settings of each variant',
    '',
    settingsTable(summary),
    '',
    '## Machine',
    '',
    table(
      ['', ''],
      [
        ['CPU', `${machine.cpuModel}, ${machine.cores} cores`],
        ['memory', `${machine.memoryGb} GB`],
        ['OS', machine.os],
        ['Node', machine.node],
        ['Redis', `${machine.redis} (${machine.redisSource})`],
        ['network', describeNetwork(collected.network)],
        ['pinning', machine.pinning],
        ['load average (1/5/15 min) at start / end', `${machine.loadAverageAtStart} / ${machine.loadAverageAtEnd ?? '?'}`],
      ],
      2,
    ),
    '',
    `Workload sizes: W1 ${settings.w1.ops} ops (+${settings.w1.warmup} warm-up); W2 ${settings.w2.tasks} tasks for ${settings.w2.durationMs} ms; W3 ${settings.w3.processes}x${settings.w3.tasks} tasks for ${settings.w3.durationMs} ms; W4 ${settings.w4.handoffs} hand-offs, holder holds ${settings.w4.holdMs}-${settings.w4.holdMs + settings.w4.holdJitterMs} ms; W5 ${settings.w5.waiters} waiters, ${settings.w5.settleMs} ms settle, ${settings.w5.capMs} ms cap${settings.w5x ? `; W5x ${settings.w5x.waiters} waiters, ${settings.w5x.settleMs} ms settle, ${settings.w5x.capMs} ms cap` : ''}. A run that took over ${REPEAT_ONLY_UNDER_MS / 1000} s (a slow poller's W4, a W5 that hit its cap) is not repeated.`,
  ].join('\n');
}
