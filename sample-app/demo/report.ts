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
  const header = ['endpoint', 'stock', 'requests', 'reserved', 'rejected', '423', 'failed', 'oversold', 'stock left', 'lock wait p50/p95/p99 ms'];
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
