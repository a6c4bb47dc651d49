import type { LockEngine } from '../engine/lock-engine';

/**
 * Per module instance, RedLock and owner: attempts out (sent, or granted and not yet recorded or
 * undone) and releases sent. A RedLock release takes every hold of the owner on a master, so it must
 * not be sent while another attempt of the same owner may be granted (that flow would hold nothing),
 * and a grant whose round overlapped a release of the owner is not to be trusted (the release may
 * have reached a master after the grant there).
 */
export interface OwnerTraffic {
  attempts: number;
  releases: number;
}

const trafficOf = new WeakMap<LockEngine, Map<string, OwnerTraffic>>();

const keyOf = (lockKey: string, ownerId: string): string => `${lockKey}\n${ownerId}`;

/** The owner's traffic record (made on first use). */
export function ownerTraffic(engine: LockEngine, lockKey: string, ownerId: string): OwnerTraffic {
  let byKey = trafficOf.get(engine);
  if (!byKey) trafficOf.set(engine, (byKey = new Map()));
  let traffic = byKey.get(keyOf(lockKey, ownerId));
  if (!traffic) byKey.set(keyOf(lockKey, ownerId), (traffic = { attempts: 0, releases: 0 }));
  return traffic;
}

/** One attempt of the owner is over; the record goes with the last (releases matter only to attempts out). */
export function attemptOver(engine: LockEngine, lockKey: string, ownerId: string, traffic: OwnerTraffic): void {
  traffic.attempts -= 1;
  if (traffic.attempts === 0) trafficOf.get(engine)?.delete(keyOf(lockKey, ownerId));
}

/** A release of the owner is going out: a round in progress must not trust its grant. */
export function releaseSent(engine: LockEngine, lockKey: string, ownerId: string): void {
  const traffic = trafficOf.get(engine)?.get(keyOf(lockKey, ownerId));
  if (traffic) traffic.releases += 1;
}
