/**
 * The randomized hold model (test/hold-model/randomized.spec.ts: the same schedules, ingredients,
 * witnesses and FC_* switches) in `layout: 'redisson'` (docs/redisson-interop.md). What changes:
 * - each kind has its own names (one kind per name, as Java must): plain locks and a multi-lock's
 *   members `<prefix><name>`, fair `<prefix>fair-<name>`, read-write `<prefix>rw-<name>`, semaphores
 *   `<prefix>sem-<name>`; the child's waiters run in this layout too;
 * - "does this body hold it" is read from Redisson's hash `N`: `HEXISTS N <owner>` (plain, fair),
 *   `<owner>:write` (write), and for a read `<owner>` with its `{N}:<owner>:rwlock_timeout:1` alive;
 * - each schedule also draws `redisson.fencedLocks` (plain locks as Java's `RFencedLock`);
 * - and 1 to 4 hostile calls (issue 42) among its ops, of any kind: a name shaped like a derived key
 *   of the schedule's own locks (another lock's fencing counter, a fair queue, a semaphore's leases,
 *   a reader's timeout key, this library's records) must be refused with InvalidLockNameError, and an
 *   application key of every type (string, number, hashes, one with a `mode` field, list, set, sorted
 *   set, stream; written before the schedule) must be a LockNameConflictError; no body runs, every
 *   application key is unchanged at the end, no fencing counter ever goes back and no two holds share
 *   a token;
 * - at the end, keys Redisson keeps by design may lack a TTL (a semaphore's counter and leases, a fair
 *   queue, a fenced lock's token counter; test/support/randomized/layout-audit.ts), and every
 *   instance's hold accounts (attempts out, grants pending) are closed.
 * `deadlockCheckAfter` stays unset (refused in this layout).
 *
 * CI runs 8 schedules (about 30 s). Its number of runs is FC_REDISSON_RUNS (FC_RUNS is the native run's:
 * CI's second pass lowers that one); every other FC_* switch is the native run's. Replay and explore:
 *   FC_SEED=<seed> FC_PATH=<path> npx jest test/hold-model/randomized-redisson.spec.ts
 *   FC_REDISSON_RUNS=60 FC_TIME_LIMIT_MS=300000 FC_SEED=$RANDOM npx jest test/hold-model/randomized-redisson.spec.ts
 */
import { describeRandomizedHoldModel } from '../support/randomized/property';

describeRandomizedHoldModel({ layout: 'redisson', spec: 'test/hold-model/randomized-redisson.spec.ts', defaultRuns: 8, runsVariable: 'FC_REDISSON_RUNS' });
