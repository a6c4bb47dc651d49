import { createHash, randomBytes } from 'node:crypto';

const prefixes = new Map<string, Buffer>();

/**
 * A new RPermitExpirableSemaphore permit id: 16 raw bytes, as Redisson's are (it stores them as is
 * and shows them as 32 lowercase hex). The first 6 are this client's (sha256 of its client id), so
 * `inspect` can tell our permits by instance; the other 10 are random.
 */
export function newPermitId(clientId: string): Buffer {
  let prefix = prefixes.get(clientId);
  if (!prefix) prefixes.set(clientId, (prefix = createHash('sha256').update(clientId).digest().subarray(0, 6)));
  return Buffer.concat([prefix, randomBytes(10)]);
}

/** Redisson's never-expiring permit's deadline (RedissonPermitExpirableSemaphore.nonExpirableTimeout). */
export const NEVER_EXPIRES = '922337203685477';
