import { Injectable } from '@nestjs/common';
import Redis from 'ioredis';
import { InjectAppRedis } from '../redis/app-redis.provider';

/**
 * Writes a record (a Redis hash) only when the caller's fencing token is not smaller than the
 * token of the last accepted write: the storage itself refuses a holder whose lock expired while
 * it was paused (GC, SIGSTOP, a long synchronous loop) and that another holder has overtaken.
 * The same pattern in SQL: `UPDATE ... SET ..., fence = $token WHERE id = $id AND fence <= $token`.
 */
const FENCED_WRITE = `
-- KEYS[1] the record (hash); its field 'fence' is the token of the last accepted write
-- ARGV[1] the writer's fencing token; ARGV[2..] field, value, field, value, ...
-- Returns 1 when written, 0 when refused (a newer holder already wrote)
local recordKey = KEYS[1]
local token = tonumber(ARGV[1])
local lastToken = tonumber(redis.call('hget', recordKey, 'fence') or '0')
if token < lastToken then
  return 0
end
redis.call('hset', recordKey, 'fence', ARGV[1], unpack(ARGV, 2))
return 1
`;

@Injectable()
export class FencedStore {
  constructor(@InjectAppRedis() private readonly redis: Redis) {}

  /** Writes `fields` into `recordKey` unless a write with a larger token came first; true when written. */
  async write(recordKey: string, fields: Record<string, string | number>, fencingToken: number | undefined): Promise<boolean> {
    if (fencingToken === undefined) throw new Error('a fenced write needs the lock\'s fencing token');
    const args = Object.entries(fields).flat().map(String);
    return (await this.redis.eval(FENCED_WRITE, 1, recordKey, String(fencingToken), ...args)) === 1;
  }
}
