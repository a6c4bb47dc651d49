import type Redis from 'ioredis';

/** Every key of the server with its PTTL (-1: no expiry), by SCAN: what is left behind, and for how long. */
export async function keysWithTtl(raw: Redis): Promise<Array<{ key: string; pttl: number }>> {
  const found: Array<{ key: string; pttl: number }> = [];
  let cursor = '0';
  do {
    const [next, keys] = await raw.scan(cursor, 'COUNT', 500);
    cursor = next;
    for (const key of keys) {
      const pttl = await raw.pttl(key);
      if (pttl !== -2) found.push({ key, pttl });
    }
  } while (cursor !== '0');
  return found;
}

/** Keys that will never expire by themselves: a lock left held forever, or a counter the test wrote. */
export async function keysWithoutTtl(raw: Redis, ignore: (key: string) => boolean = () => false): Promise<string[]> {
  return (await keysWithTtl(raw)).filter(({ key, pttl }) => pttl === -1 && !ignore(key)).map(({ key }) => key);
}

/**
 * Lock state left held (not bookkeeping): the lock hashes and their leases. Release records
 * (`:rq:`), fence keys, waiting lines (`:line`, `:deadlines`) and instance keys expire by
 * themselves and hold nothing.
 */
export function isHoldKey(key: string): boolean {
  if (!key.startsWith('lock:')) return false;
  return !/:rq:|:fence$|:line$|:deadlines$|:seen$/.test(key);
}

/** How many scripts (EVAL, EVALSHA and their read-only forms, FCALL) the server has run so far. */
export async function scriptsRun(raw: Redis): Promise<number> {
  const info = await raw.info('commandstats');
  let calls = 0;
  for (const match of info.matchAll(/^cmdstat_(eval|evalsha|eval_ro|evalsha_ro|fcall|fcall_ro):calls=(\d+)/gm)) calls += Number(match[2]);
  return calls;
}
