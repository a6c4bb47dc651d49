/** Every text the library logs or puts in a configuration error, in one place. */

/** Text from a caller (a lock name may be a request value) is quoted with at most this many characters. */
export const QUOTED_NAME_LIMIT = 200;

/**
 * A lock name as every message, log line and error body quotes it: JSON-quoted (a newline in a name
 * cannot forge a log line), cut to its first 200 characters with its length said when longer.
 */
export const quoteName = (name: string): string =>
  name.length <= QUOTED_NAME_LIMIT
    ? JSON.stringify(name)
    : `${JSON.stringify(name.slice(0, QUOTED_NAME_LIMIT))}... (${name.length} characters)`;

/** A name cut as `quoteName` cuts it, for the `lockName` of an error body. */
export const shortName = (name: string): string => (name.length <= QUOTED_NAME_LIMIT ? name : name.slice(0, QUOTED_NAME_LIMIT));

export const show = (value: unknown): string => {
  if (typeof value === 'string') return quoteName(value);
  // JSON.stringify turns these into null, which hides the mistake.
  if (typeof value === 'number' && !Number.isFinite(value)) return String(value);
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value === 'function') return `function ${value.name || '(anonymous)'}`;
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
};

export const INVALID_OPTION = (option: string, expected: string, value: unknown): string =>
  `LockModule option "${option}" must be ${expected} (got ${show(value)})`;

export const UNKNOWN_OPTION = (option: string, known: readonly string[]): string =>
  `LockModule option "${option}" is not a known option (known: ${known.join(', ')})`;

// --- the errors' own texts (errors.ts) ---

/** Names a lock in messages: one name, or the names of a multi-lock. */
const lockNames = (lockName: string | readonly string[]): string =>
  typeof lockName === 'string' ? quoteName(lockName) : `[${lockName.map(quoteName).join(', ')}]`;

export const LOCK_NOT_ACQUIRED = (lockName: string | readonly string[], waitTime: number): string =>
  `Lock ${lockNames(lockName)} was not acquired within ${waitTime} ms`;

export const LOCK_NOT_HELD = (name: string): string => `Lock ${quoteName(name)} is not held by the current owner`;

export const LOCK_WAS_LOST = (name: string, reason: string): string => `Lock ${quoteName(name)} was lost: ${reason}`;

export const LOCK_UPGRADE_DEADLOCK = (name: string): string =>
  `Write lock ${quoteName(name)} was requested while holding only its read lock; ` +
  'upgrading would deadlock: release the read lock first';

/** One step of a deadlock's cycle as the error's message shows it. */
interface DeadlockStepText {
  readonly lock: string;
  readonly owner: string;
  readonly inLine?: boolean;
  readonly instance?: { readonly host: string; readonly pid: number };
}

/**
 * A wait refused as a deadlock: the locks of the cycle in order, each with whom it waits for
 * (docs/deadlocks.md). The first step is the refused call chain's own wait.
 */
export const LOCK_DEADLOCK = (steps: readonly DeadlockStepText[]): string => {
  const shown = steps.map((step, i) => {
    const where = step.instance ? ` on ${step.instance.host}:${step.instance.pid}` : '';
    const whose = i === steps.length - 1 ? 'this call chain' : `owner ${step.owner}${where}`;
    return `${quoteName(step.lock)} (${step.inLine ? 'behind' : 'held by'} ${whose})`;
  });
  const names = [...new Set(steps.map((step) => quoteName(step.lock)))];
  const fix =
    names.length > 1
      ? `take ${names.join(' and ')} in one order everywhere, or as one multi-lock`
      : `take ${names[0]} again through the call chain's own owner (it re-enters), or all at once`;
  return (
    `Deadlock: this call chain waits for ${shown.join(', which waits for ')}. ` +
    `The wait for ${quoteName(steps[0]?.lock ?? '')} was refused so the others can go on; ${fix}`
  );
};

/** `noAnswer`: Redis said nothing in time, so `cause` is a timeout, not an error Redis gave. */
export const LOCK_UNAVAILABLE = (lockName: string | readonly string[], cause: string, noAnswer: boolean): string =>
  `Lock ${lockNames(lockName)} is unavailable: Redis ${noAnswer ? `gave ${cause}` : `failed: ${cause}`}`;

export const MODULE_SHUTTING_DOWN = (name?: string): string =>
  name ? `LockModule is shutting down: wait for ${quoteName(name)} cancelled` : 'LockModule is shutting down';

export const SEMAPHORE_LIMIT_MISMATCH = (name: string, permits: number, storedPermits: number): string =>
  `Semaphore ${quoteName(name)} is in use with permits: ${storedPermits}, but was asked with permits: ${permits}; ` +
  'every caller must use the same limit (it can change once nobody holds or waits for the semaphore)';

// --- why a held lock was lost (LockLostError's reason) ---

export const LOST_RENEWAL_FOUND_GONE = 'renewal found it no longer held';
export const LOST_LEASE_TIME_RAN_OUT = 'its leaseTime ran out';
export const LOST_LEASE_RAN_OUT_UNRENEWED = 'its lease ran out before it was renewed (process paused or Redis unreachable)';
export const LOST_RENEWALS_FAILED = 'renewals failed until its lease ran out';
export const REENTRY_HOLD_ENDED = (name: string): string => `the hold of "${name}" to re-enter had ended`;
export const LOST_REENTRY_ENDED = 'it had ended in Redis: a re-entry of its owner found the owner holding nothing';
export const LOST_NEW_EPISODE = 'it had ended in Redis: the same owner was granted the lock again with a new fencing token';
export const LOST_READ_ENDED = 'its read hold had ended in Redis: the same owner was granted the read lock again, in a new episode';
export const LOST_WRITE_ENDED = 'its write hold had ended in Redis: the same owner was granted the read lock as a reader, no longer the writer';
export const LOST_RELEASE_FOUND_GONE = 'a release of an inner hold found the lock no longer held';
export const LOST_HANDED_OVER_GONE = 'the lock a release handed over was gone when its new holder confirmed it';
export const LOST_HAND_OVER_UNCONFIRMED =
  'its hand-over could not be confirmed before its grant lease ended (Redis unreachable or not answering)';

export const LOCK_LOST = (name: string, reason: string): string =>
  `Lock ${quoteName(name)} was lost (${reason}); its holder's signal is aborted`;

export const RENEWAL_FAILED = (name: string, error: unknown): string =>
  `Renewal of lock ${quoteName(name)} failed, retrying until its lease runs out: ${String(error)}`;

export const RELEASE_FAILED = (name: string, error: unknown): string =>
  `Release of lock ${quoteName(name)} failed; it will expire with its lease: ${String(error)}`;

export const RELEASE_FOUND_NOTHING = (name: string): string =>
  `Lock ${quoteName(name)} was already gone when its holder released it (it had been lost)`;

export const RELEASE_LEFT_TO_SHUTDOWN = (name: string): string =>
  `Lock ${quoteName(name)} is released by the module's shutdown, which began while its holder ran`;

export const SHUTDOWN_RELEASE_FAILED = (error: unknown): string =>
  `Releasing held locks at shutdown did not complete: ${String(error)}`;

export const INVALID_LOCK_NAME = (value: unknown): string =>
  `A lock name must be a non-empty string (got ${show(value)})`;

/** Gives the limit and the length, never the name (which may be huge, and is the caller's input). */
export const LOCK_NAME_TOO_LONG = (length: number, limit: number): string =>
  `A lock name may have at most ${limit} characters (maxNameLength); this one has ${length}`;

export const INVALID_TIME = (what: string, value: unknown): string =>
  `${what} must be a non-negative number of milliseconds (got ${show(value)})`;

export const INVALID_PERMITS = (value: unknown): string => `permits must be a whole number >= 1 (got ${String(value)})`;

export const INVALID_TAKE = (permits: number, take: unknown): string =>
  `take must be a whole number from 1 to the semaphore's permits (${permits}) (got ${String(take)})`;

// --- force release conditional on a fencing token ---

export const FORCE_RELEASE_BAD_TOKEN = (call: string, token: unknown): string =>
  `${call}({ fencingToken: ${show(token)} }) is refused: fencingToken must be a positive whole number (a token inspect() or getFencingToken() gave)`;

export const FORCE_RELEASE_NO_TOKEN = (call: string, what: string): string =>
  `${call}({ fencingToken }) is refused: ${what} has no fencing token to compare (call it without options to release whoever holds it)`;

export const FORCE_RELEASE_BAD_PERMIT_ID = (permitId: unknown): string =>
  `forceRelease({ permitId: ${show(permitId)} }) is refused: permitId must be a holder's owner id (a non-empty string, as inspect() lists it)`;

// --- jobs and consumers (skipIfLocked, minHoldTime) ---

const showNames = (name: string | readonly string[]): string =>
  typeof name === 'string' ? quoteName(name) : `[${name.map(quoteName).join(', ')}]`;

/** Debug level only: a skipped run is the expected outcome on every replica but one. */
export const LOCK_SKIPPED = (name: string | readonly string[], waitTime: number): string =>
  `Lock ${showNames(name)} is held elsewhere: not acquired within ${waitTime} ms, the work was skipped (skipIfLocked)`;

/** Debug level only: a job that fires while its replica shuts down is left to the other replicas. */
export const LOCK_SKIPPED_AT_SHUTDOWN = (name: string | readonly string[]): string =>
  `Lock ${showNames(name)} was not taken: the module is shutting down, the work was skipped (skipIfLocked)`;

export const INVALID_MIN_HOLD_TIME = (value: unknown): string =>
  `minHoldTime must be a finite number of milliseconds >= 0 (got ${show(value)})`;

export const MIN_HOLD_OVER_LEASE = (minHoldTime: number, leaseTime: number): string =>
  `minHoldTime (${minHoldTime} ms) must not exceed leaseTime (${leaseTime} ms): the lock would expire ` +
  'before its minimum hold ended';

// --- decorators and key templates ---

/** The method decorator a configuration error names (`@FairLock` and the like are `@DistributedLock`). */
export type DecoratorName = '@DistributedLock' | '@DistributedSemaphore';

const isSemaphore = (decorator: DecoratorName): boolean => decorator === '@DistributedSemaphore';

export const KEY_TEMPLATE_SYNTAX = (template: string, position: number, problem: string): string =>
  `Key template ${show(template)} is invalid at position ${position}: ${problem}`;

/** Said when a method's parameter names look renamed by a minifier (every name one or two characters). */
const MINIFIED_HINT =
  '. These names look minified: a minifier renames parameters, so name them by position instead ' +
  '(#0, #1.field, which survive minification) or a key function, or build without mangling names';

export const KEY_TEMPLATE_UNKNOWN_PARAMETER = (
  method: string,
  template: string,
  name: string,
  known: string,
  looksMinified = false,
  decorator: DecoratorName = '@DistributedLock',
): string =>
  `${decorator} on ${method}: key template ${show(template)} names parameter "${name}", ` +
  `which ${method} does not have (its parameters: ${known})${looksMinified ? MINIFIED_HINT : ''}`;

export const KEY_TEMPLATE_UNKNOWN_POSITION = (
  method: string,
  template: string,
  placeholder: string,
  count: number,
  decorator: DecoratorName = '@DistributedLock',
): string =>
  `${decorator} on ${method}: key template ${show(template)} uses ${placeholder}, ` +
  `but ${method} declares ${count} parameter${count === 1 ? '' : 's'} (positions start at 0)`;

export const KEY_TEMPLATE_NAMES_UNREADABLE = (
  method: string,
  template: string,
  name: string,
  decorator: DecoratorName = '@DistributedLock',
): string =>
  `${decorator} on ${method}: key template ${show(template)} names parameter "${name}", ` +
  `but the parameter names of ${method} cannot be read from its source (a native or bound function, or code ` +
  'rewritten by a minifier or bundler); name parameters by position instead (#0, #1.field, which survive ' +
  'minification) or use a key function';

export const KEY_TEMPLATE_BAD_VALUE = (method: string, template: string, placeholder: string, problem: string): string =>
  `Lock key for ${method} not built: ${placeholder} in ${show(template)} is ${problem}; ` +
  'the method was not run (an empty or shared key would serialise unrelated calls)';

/** Gives the lengths, never the value (it may be huge, and is the caller's input). */
export const KEY_TEMPLATE_TOO_LONG = (method: string, template: string, placeholder: string, length: number, limit: number): string =>
  `Lock key for ${method} not built: ${placeholder} in ${show(template)} makes a key of ${length} characters; ` +
  `the limit is ${limit} (maxNameLength); the method was not run`;

export const KEY_FUNCTION_TOO_LONG = (method: string, index: number | undefined, length: number, limit: number): string =>
  `Lock key for ${method} not built: the key function returned a name${index === undefined ? '' : ` at index ${index}`} ` +
  `of ${length} characters; the limit is ${limit} (maxNameLength); the method was not run`;

export const KEY_FUNCTION_BAD_RESULT = (method: string, problem: string): string =>
  `Lock key for ${method} not built: the key function returned ${problem}; the method was not run`;

export const DECORATOR_BAD_KEY = (method: string, key: unknown, decorator: DecoratorName = '@DistributedLock'): string =>
  isSemaphore(decorator)
    ? `${decorator} on ${method}: the key must be one template string or a function (...args) => string ` +
      `returning one name (got ${show(key)})`
    : `${decorator} on ${method}: the key must be a template string, an array of them, or a function ` +
      `(...args) => string | string[] (got ${show(key)})`;

/** `@DistributedSemaphore`'s key function returned several names. */
export const SEMAPHORE_KEY_SEVERAL = (method: string): string =>
  `@DistributedSemaphore on ${method}: the key function returned several names; a semaphore takes one`;

export const DECORATOR_BAD_OPTION = (
  method: string,
  option: string,
  expected: string,
  value: unknown,
  decorator: DecoratorName = '@DistributedLock',
): string => `${decorator} on ${method}: option "${option}" must be ${expected} (got ${show(value)})`;

export const DECORATOR_MIN_HOLD_OVER_LEASE = (
  method: string,
  minHoldTime: number,
  leaseTime: number,
  decorator: DecoratorName = '@DistributedLock',
): string =>
  `${decorator} on ${method}: option "minHoldTime" (${minHoldTime} ms) must not exceed "leaseTime" ` +
  `(${leaseTime} ms): the lock would expire before its minimum hold ended`;

export const DECORATOR_NOT_A_METHOD = (method: string, decorator: DecoratorName = '@DistributedLock'): string =>
  `${decorator} on ${method}: only methods can be ${isSemaphore(decorator) ? 'decorated' : 'locked'} (not getters, setters or fields)`;

export const DECORATOR_ON_STATIC = (method: string, decorator: DecoratorName = '@DistributedLock'): string =>
  `${decorator} on ${method}: static methods cannot be ${isSemaphore(decorator) ? 'decorated' : 'locked'} ` +
  '(the lock module is found through the instance)';

export const DECORATOR_STACKED = (method: string, decorator: DecoratorName = '@DistributedLock'): string =>
  isSemaphore(decorator)
    ? `${decorator} on ${method}: the method has two lock decorators; a method takes one ` +
      '(either permits of one semaphore or a lock)'
    : `${decorator} on ${method}: the method has two lock decorators; use one with an array of keys ` +
      '(taken together as one multi-lock, in a stable order)';

export const DECORATOR_NOT_ASYNC = (method: string, returnType: string, decorator: DecoratorName = '@DistributedLock'): string =>
  `${decorator} on ${method}: the method is declared to return ${returnType}; a ` +
  `${isSemaphore(decorator) ? 'method taking permits returns a Promise (it waits for the permits)' : 'locked method returns a Promise (it waits for the lock)'}` +
  ', so declare it async / returning a Promise';

export const DECORATOR_NOT_BOUND = (method: string, decorator: DecoratorName = '@DistributedLock'): string =>
  `${method} is decorated with ${decorator} but its instance is not known to any LockModule: ` +
  'import LockModule into the application and let Nest create the instance (the method was not run)';

export const DECORATOR_AMBIGUOUS_BINDING = (method: string, count: number, decorator: DecoratorName = '@DistributedLock'): string =>
  `${method} is decorated with ${decorator} and ${count} LockModule instances could serve it; ` +
  'import exactly one LockModule into the module that provides it';

export const DECORATOR_ALREADY_BOUND = (method: string, decorator: DecoratorName = '@DistributedLock'): string =>
  `${method} is decorated with ${decorator} and its instance is already served by the LockModule ` +
  'of another application; an instance can belong to one application at a time';

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

// --- introspection (list) ---

export const GLOB_INVALID = (pattern: string, why: string): string => `list({ match: ${quoteName(pattern)} }) is refused: the pattern is invalid: ${why}`;

export const LIST_BAD_COUNT = (count: unknown, max: number): string =>
  `list({ count: ${show(count)} }) is refused: count must be a whole number from 1 to ${max} (keys SCAN looks at per round trip; a huge one blocks Redis)`;

export const INSTANCES_BAD_COUNT = (count: unknown, max: number): string =>
  `liveInstances({ count: ${show(count)} }) is refused: count must be a whole number from 1 to ${max} (instances listed per call)`;

export const GLOB_TOO_COSTLY = (pattern: string, why: string): string =>
  `list({ match: ${quoteName(pattern)} }) is refused: the pattern is too costly to match: ${why}`;

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

export const LOCK_CONTEXT_ON_CONSTRUCTOR = (className: string): string =>
  `@LockContext() marks a method parameter; it was put on a constructor parameter of ${className}`;

export const REQUEST_CLOSED = 'The client closed the request while it waited for a lock';

// --- a newcomer's path (global by default, skipIfLocked where a caller waits, template names) ---

export const SEVERAL_GLOBAL_LOCK_MODULES = (count: number): string =>
  `This application registers ${count} LockModule instances as global (LockModule is global by default), ` +
  'so which one LockService and the decorators would use is not defined. Keep one global and give every ' +
  'other LockModule.forRoot()/forRootAsync() isGlobal: false; a module that imports one of those is ' +
  'served by it';

export const DECORATOR_SKIP_ON_ANSWERING_HANDLER = (method: string, handler: string, decorator: DecoratorName = '@DistributedLock'): string =>
  `${decorator} on ${method}: skipIfLocked on ${handler} is refused. When the ` +
  `${isSemaphore(decorator) ? 'permits are taken' : 'lock is busy'} the method would not run and its caller would get a ` +
  'success with an empty answer (201 and no body on a POST), so a second submission would look accepted. ' +
  `Drop skipIfLocked and give { waitTime: 0 }: a busy ${isSemaphore(decorator) ? 'semaphore' : 'lock'} then answers ` +
  'what a busy lock answers (LockTimeoutError: 423 Locked over HTTP, the same body over RPC and GraphQL) at once; ' +
  'see docs/double-submission.md. skipIfLocked is for work no caller waits for: @Cron jobs, queue consumers, ' +
  '@EventPattern handlers';

/** Appended to KEY_TEMPLATE_UNKNOWN_PARAMETER when a parameter's name is close to the one the template names. */
export const KEY_TEMPLATE_DID_YOU_MEAN = (name: string): string => `. Did you mean #${name}?`;

// --- a key that is not the structure a lock expects; Redis failures in plain words (errors.ts, lib/http) ---

/** A Redis type, or a structure a lock kind keeps, in words: what LOCK_NAME_CONFLICT says. */
const STRUCTURE_WORDS: Readonly<Record<string, string>> = {
  string: 'a string',
  hash: 'a hash',
  list: 'a list',
  set: 'a set',
  zset: 'a sorted set',
  stream: 'a stream',
  lock: 'a lock',
  'read-write-lock': 'a read-write lock',
  'permit-counter': "a semaphore's permit counter",
  'permit-leases': "a semaphore's permit leases",
  'fair-queue': "a fair lock's queue",
  'fair-deadlines': "a fair lock's deadlines",
  'fence-token': 'a fencing token counter',
};
const structureWords = (code: string): string => STRUCTURE_WORDS[code] ?? `a ${code}`;

/**
 * A key held something else than the lock's structure, and nothing was written (the 409 body says
 * it). `key` and `holds` are unknown when Redis refused a command on the key (WRONGTYPE).
 */
export const LOCK_NAME_CONFLICT = (lockName: string | readonly string[], key: string | undefined, holds: string | undefined, expected: string): string =>
  key === undefined || holds === undefined
    ? `Lock ${lockNames(lockName)} cannot be used: one of its keys holds another type of value than ${structureWords(expected)}. ` +
      'Use lock names that no other key of this Redis uses'
    : `The key ${quoteName(key)} holds ${structureWords(holds)}, not ${structureWords(expected)}: lock ${lockNames(lockName)} cannot use it and changed nothing. ` +
      'Use lock names (key template prefixes) that no other key of this Redis uses';

/** Redis error codes (an error reply's first word) in plain words; any other code: REDIS_ANSWERED_ERROR. */
export const REDIS_ERROR_CODE_WORDS: Readonly<Record<string, string>> = {
  READONLY: 'Redis is a read-only replica',
  LOADING: 'Redis is loading its data',
  CLUSTERDOWN: 'the Redis Cluster is down',
  OOM: 'Redis is out of memory',
  BUSY: 'Redis is busy running a script',
  MASTERDOWN: 'Redis lost its master',
  TRYAGAIN: 'the Redis Cluster is moving the lock (try again)',
  MISCONF: 'Redis cannot save its data and refuses writes',
  NOPERM: "Redis refused this client's permissions",
  NOAUTH: 'Redis refused this client (authentication)',
  WRONGPASS: 'Redis refused this client (authentication)',
  NOREPLICAS: 'Redis has too few replicas to accept writes',
};
export const REDIS_ANSWERED_ERROR = 'Redis answered an error';
export const REDIS_UNREACHABLE = 'Redis could not be reached';
export const REDIS_NO_ANSWER = (timeoutMs: number): string => `Redis gave no answer within ${timeoutMs} ms`;

/** LockUnavailableError's message: the lock and what happened in plain words (its `cause` keeps Redis's own text). */
export const LOCK_UNAVAILABLE_PLAIN = (lockName: string | readonly string[], what: string): string => `Lock ${lockNames(lockName)} is unavailable: ${what}`;

/** The exception filter's log line for a 5xx answer: the internals the client does not see. */
export const LOCK_ERROR_CAUSE = (status: number, lockName: string | readonly string[], message: string, cause: string): string =>
  `Answered ${status} for lock ${lockNames(lockName)}: ${message}. Cause: ${cause} (logged once a minute per lock name)`;
