/**
 * Which network the bench's clients see: plain loopback (the default), or a fixed round trip added
 * by the delay relay in front of redis-server (BENCH_RTT_MS, e.g. 0.5: 0.25 ms each way).
 */
export type NetworkMode = { readonly kind: 'loopback' } | { readonly kind: 'relay'; readonly rttMs: number };

export const LOOPBACK: NetworkMode = { kind: 'loopback' };

export function networkModeFromEnv(): NetworkMode {
  const raw = process.env.BENCH_RTT_MS;
  if (raw === undefined || raw.trim() === '') return LOOPBACK;
  const rttMs = Number(raw);
  // Below 0.01 ms the relay's ~50 us sleep precision is all there is; 0 would only add a hop.
  if (!Number.isFinite(rttMs) || rttMs < 0.01 || rttMs > 1000) throw new Error(`BENCH_RTT_MS: expected a round trip in ms (0.01-1000), got "${raw}"`);
  return { kind: 'relay', rttMs };
}

/** The relay delays each direction by half the round trip; it takes whole microseconds. */
export function oneWayDelayUs(mode: NetworkMode & { kind: 'relay' }): number {
  return Math.round((mode.rttMs * 1000) / 2);
}

/** For report headings: "loopback" or "RTT 0.5 ms (delay relay, 250 us each way)". */
export function describeNetwork(mode: NetworkMode | undefined): string {
  if (!mode || mode.kind === 'loopback') return 'loopback (no added delay)';
  return `RTT ${mode.rttMs} ms (delay relay, ${oneWayDelayUs(mode)} us each way)`;
}
