import { WAIT_NO_REPLY } from '../lock.messages';
import type { RedisClient } from './redis-client';

/**
 * Redis `WAIT`: how many replicas acknowledged, within `timeoutMs`, every write this connection
 * has made so far (so the acquisition just made). WAIT has no key: sent in a pipeline behind a read
 * of `key`, it goes to the connection that owns `key` (on a cluster, the slot's master, which is
 * where the acquisition ran). WAIT takes whole milliseconds: a time left over is rounded up.
 */
export async function waitForReplicas(client: RedisClient, key: string, replicas: number, timeoutMs: number): Promise<number> {
  const results = await client.pipeline().pttl(key).wait(replicas, Math.ceil(timeoutMs)).exec();
  const [error, confirmed] = results?.[1] ?? [new Error(WAIT_NO_REPLY), 0];
  if (error) throw error;
  return Number(confirmed);
}
