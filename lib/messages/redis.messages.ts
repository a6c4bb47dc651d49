import { quoteName, show } from './quoting';

/** Multi-lock, RedLock and replicas; Redis faults, connections and server versions; the health indicator. */

// --- multi-lock, RedLock, replicas ---

export const MULTI_LOCK_EMPTY = (what: string): string => `${what} needs at least one lock (got none)`;

export const MULTI_LOCK_FOREIGN_MEMBER = (index: number, value: unknown): string =>
  `getMultiLock takes locks made by LockService, FairLockService or ReadWriteLockService ` +
  `(argument ${index} is ${show(value)})`;

export const REDLOCK_NOT_CONFIGURED = (name: string): string =>
  `getRedLock(${show(name)}) needs the LockModule option redlock: { clients: [...] } (independent Redis masters)`;

export const REDLOCK_NO_MAJORITY = (name: string, confirmed: number, masters: number, quorum: number): string =>
  `RedLock ${quoteName(name)}: ${confirmed} of ${masters} masters confirmed, ${quorum} needed`;

export const REPLICAS_NOT_SYNCED = (name: string, confirmed: number, wanted: number, timeoutMs: number): string =>
  `Lock ${quoteName(name)} was acquired but only ${confirmed} of ${wanted} replicas confirmed it within ${timeoutMs} ms ` +
  '(syncReplicas); it was released again';

export const REDLOCK_CONNECTION_FAILED = (index: number, error: unknown): string =>
  `RedLock master redlock.clients[${index}] could not connect (it counts as a "no" until it does): ${String(error)}`;

export const REDLOCK_DUPLICATE_MASTERS = (first: number, second: number, runId: string): string =>
  `LockModule option redlock.clients[${first}] and redlock.clients[${second}] reach the same Redis server ` +
  `(run_id ${runId}): RedLock needs independent masters, and one server listed twice would vote twice; ` +
  'list each master once';

export const REDLOCK_MASTER_UNIDENTIFIED = (status: string): string =>
  `RedLock master not identified yet (INFO server unanswered, connection ${status}): its vote does not count`;

export const WAIT_NO_REPLY = 'WAIT (syncReplicas) got no reply';

export const NOT_CONNECTED = (status: string): string => `not connected (${status})`;

// --- Redis faults ---

export const NO_ANSWER = (timeoutMs: number): string => `no answer within ${timeoutMs} ms`;

/** A pipelined renewal that came back without its reply. */
export const RENEWAL_NO_REPLY = 'no reply';

export const SHUTDOWN_RELEASE_TIMED_OUT = (budgetMs: number): string => `timed out after ${budgetMs} ms`;

/** Debug line of a connection's error event (`what`: the connection or the command, as `commands`). */
export const CONNECTION_ERROR_DEBUG = (what: string, message: string): string => `${what}: ${message}`;

/** A channel holds the lock's name: quoted (and cut) as names are. */
export const SUBSCRIBE_FAILED = (channel: string): string => `SUBSCRIBE ${quoteName(channel)} failed`;

export const CHANNEL_COMMAND = (command: 'subscribe' | 'unsubscribe', channel: string): string => `${command} ${quoteName(channel)}`;

export const SUBSCRIBER_CLOSED = 'The lock subscriber connection was closed';

export const LUA_SCRIPT_MISSING = (name: string): string =>
  `No Lua script named '${name}' in the library's generated sources (lua/${name}.lua); ` +
  'run `node scripts/generate-lua.js` after adding a script';

// --- health indicator (nestjs-redis-locks/terminus) ---

export const HEALTH_PING_FAILED = (cause: string): string => `Redis did not answer PING: ${cause}`;

export const HEALTH_RENEWALS_FAILING = (failingMs: number, leaseMs: number): string =>
  `Lock renewals have failed for ${failingMs} ms (lease ${leaseMs} ms)`;

export const CONNECTION_FAILED = (address: string, cause: string): string =>
  `Redis connection to ${address} failed (${cause}); the application starts anyway, and locks answer ` +
  'LockUnavailableError until Redis is reachable';

export const SERVER_TOO_OLD = (address: string, found: string, needed: string, why: string): string =>
  `The Redis server at ${address} is ${found}; nestjs-redis-locks needs ${needed} or newer (${why}). ` +
  'Locks are refused on this server';

export const SERVER_VERSION_UNKNOWN = (address: string, cause: unknown): string =>
  `Could not read the server version of ${address} (INFO server: ${String(cause)}); not checked`;
