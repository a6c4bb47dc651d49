/** Small statistics over samples; `NaN` when there are none. */

export function sorted(values: readonly number[]): number[] {
  return [...values].sort((a, b) => a - b);
}

/** Nearest-rank percentile, `p` in [0, 100]. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const ordered = sorted(values);
  const rank = Math.min(ordered.length - 1, Math.max(0, Math.ceil((p / 100) * ordered.length) - 1));
  return ordered[rank];
}

export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const ordered = sorted(values);
  const middle = ordered.length >> 1;
  return ordered.length % 2 === 1 ? ordered[middle] : (ordered[middle - 1] + ordered[middle]) / 2;
}

export function sum(values: readonly number[]): number {
  let total = 0;
  for (const value of values) total += value;
  return total;
}

/** A number for a table: 3 significant digits, thousands without decimals, `n/a` when unknown. */
export function fmt(value: number | undefined, digits = 3): string {
  if (value === undefined || !Number.isFinite(value)) return 'n/a';
  if (Math.abs(value) >= 1000) return Math.round(value).toLocaleString('en-US');
  if (value === 0) return '0';
  return Number(value.toPrecision(digits)).toString();
}
