import type { Answer } from './load';

/** What one endpoint did with a burst of reservations. */
export interface EndpointSummary {
  endpoint: string;
  stock: number;
  requests: number;
  reserved: number;
  /** 409: the app found no stock left. */
  outOfStock: number;
  /** 423: the lock stayed busy past its waitTime. */
  locked: number;
  /** Anything else (5xx, connection errors). */
  failed: number;
  /** Reservations beyond the stock there was. */
  oversold: number;
  stockLeft: number;
  waits: { p50: number; p95: number; p99: number } | undefined;
}

export function summarize(endpoint: string, stock: number, answers: readonly Answer[], stockLeft: number): EndpointSummary {
  const count = (test: (status: number) => boolean) => answers.filter((answer) => test(answer.status)).length;
  const reserved = count((status) => status >= 200 && status < 300);
  const waits = answers.flatMap((answer) => (answer.waitedMs === undefined ? [] : [answer.waitedMs])).sort((a, b) => a - b);
  return {
    endpoint,
    stock,
    requests: answers.length,
    reserved,
    outOfStock: count((status) => status === 409),
    locked: count((status) => status === 423),
    failed: count((status) => !(status >= 200 && status < 300) && status !== 409 && status !== 423),
    oversold: Math.max(0, reserved - stock),
    stockLeft,
    waits: waits.length ? { p50: percentile(waits, 50), p95: percentile(waits, 95), p99: percentile(waits, 99) } : undefined,
  };
}

/** Nearest-rank percentile of sorted values. */
export function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

export function formatReport(summaries: readonly EndpointSummary[]): string {
  const header = ['endpoint', 'stock', 'requests', 'reserved', '409 sold out', '423', 'failed', 'oversold', 'stock left', 'lock wait p50/p95/p99 ms'];
  const rows = summaries.map((s) => [
    s.endpoint,
    String(s.stock),
    String(s.requests),
    String(s.reserved),
    String(s.outOfStock),
    String(s.locked),
    String(s.failed),
    String(s.oversold),
    String(s.stockLeft),
    s.waits ? `${s.waits.p50} / ${s.waits.p95} / ${s.waits.p99}` : '-',
  ]);
  const widths = header.map((title, i) => Math.max(title.length, ...rows.map((row) => row[i].length)));
  const line = (cells: string[]) => cells.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]) : cell.padStart(widths[i]))).join('  ');
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

/** What the scheduled job did while every instance scheduled it. */
export interface JobSummary {
  /** Whole ticks (seconds) watched. */
  ticks: number;
  /** Ticks run by exactly one instance, by none, by more than one. */
  once: number;
  missed: number;
  duplicated: number;
  /** Runs of the watched ticks per instance (its port), every instance listed (0: it skipped every one). */
  runners: Record<string, number>;
}

/**
 * Counts the job's runs per tick over the ticks that lie wholly between `from` and `to` (ms), and who
 * ran them (`runners`: field `<tick>:<port>`), over the same ticks, so the runs add up to the ticks.
 */
export function summarizeJob(runsByTick: Record<string, string>, runners: Record<string, string>, from: number, to: number, ports: readonly string[] = []): JobSummary {
  const summary: JobSummary = { ticks: 0, once: 0, missed: 0, duplicated: 0, runners: Object.fromEntries(ports.map((port) => [port, 0])) };
  const first = Math.ceil(from / 1000);
  const last = Math.floor(to / 1000) - 1; // the last tick whose whole second lies before `to`
  for (let second = first; second <= last; second++) {
    const runs = Number(runsByTick[second] ?? 0);
    summary.ticks += 1;
    if (runs === 1) summary.once += 1;
    else if (runs === 0) summary.missed += 1;
    else summary.duplicated += 1;
  }
  for (const [field, runs] of Object.entries(runners)) {
    const at = field.indexOf(':');
    const tick = Number(field.slice(0, at));
    if (at < 0 || !(tick >= first && tick <= last)) continue;
    const port = field.slice(at + 1);
    summary.runners[port] = (summary.runners[port] ?? 0) + Number(runs);
  }
  return summary;
}

export function formatJobReport(job: JobSummary, instances: number): string {
  const runs = Object.values(job.runners).reduce((sum, count) => sum + count, 0);
  const runners = Object.entries(job.runners)
    .map(([port, count]) => `:${port} ran ${count}`)
    .join(', ');
  return [
    `@Cron every second on all ${instances} instances, @DistributedLock skipIfLocked + minHoldTime 500 ms:`,
    `  ${job.ticks} ticks watched, each fired on all ${instances} instances: ${job.once} ran exactly once, ${job.duplicated} more than once, ${job.missed} not at all`,
    `  who ran them: ${runners || 'nobody'} (${runs} runs for ${job.ticks} ticks: per tick, the instance whose timer fired first ran it and the others skipped)`,
  ].join('\n');
}
