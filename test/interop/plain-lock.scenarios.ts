import { Lock } from '../../lib';
import { LockEngine } from '../../lib/engine/lock-engine';
import { waitFor } from '../support/wait-for';
import { RedissonHolder, RedissonProcess } from './redisson';
import { check, Direction, Layout, median, nodeHolderChild, NodeLocks, ScenarioRedis, ScenarioViolation, sleep } from './scenario';

/**
 * The plain lock (Redisson `RLock` / `RFencedLock`) across languages, DESIGN-redisson-layout.md §8
 * scenarios 1-5 and 9. Each is a function of the layout: on 'redisson' it resolves, on 'native' it
 * throws a `ScenarioViolation` from one of its explicit checks (Node's native keys are not Java's).
 */

/** What the scenarios run against: one Redis (standalone or a Cluster), two JVMs, Node modules. */
export interface PlainLockWorld {
  readonly redis: ScenarioRedis;
  readonly watchdogMs: number;
  readonly a: RedissonProcess;
  readonly b: RedissonProcess;
  /** Two Node modules (two processes' worth of locks) of the layout. */
  node(layout: Layout): readonly [NodeLocks, NodeLocks];
  /** A Node module whose `getLock` mirrors `RFencedLock` (redisson: `fencedLocks: true`). */
  fenced(layout: Layout): NodeLocks;
  /** A JVM that may be SIGKILLed (started when none is alive). */
  doomedJava(): Promise<RedissonProcess>;
  /** A name no other test uses. */
  fresh(what: string): string;
}

/** The other side's one attempt must be refused; when it gets in, it lets go and the scenario fails. */
async function nodeRefused(lock: Lock, what: string): Promise<void> {
  if (!(await lock.tryLock())) return;
  await lock.unlock();
  throw new ScenarioViolation('not-excluded', `a Node lock got ${lock.name} while Java held it (${what})`);
}

async function javaRefused(holder: RedissonHolder, name: string, what: string): Promise<void> {
  if (!(await holder.tryLock(name, 0))) return;
  await holder.unlock(name);
  throw new ScenarioViolation('not-excluded', `a Java lock got ${name} while Node held it (${what})`);
}

/** Node's waiter on `name` is asleep on the Redisson channel (subscribed, refused once more). */
function nodeAsleep(node: NodeLocks, name: string, given: () => boolean): Promise<void> {
  const subscriber = node.app.get(LockEngine).subscriber;
  const channel = `redisson_lock__channel:{${name}}`;
  return waitFor(() => given() || subscriber.sleepingCount(channel) >= 1, { what: `a Node waiter asleep on ${channel}` });
}

/** Java's waiter on `name` subscribed to its channel (it does so before its second try). */
function javaSubscribed(world: PlainLockWorld, name: string, given: () => boolean): Promise<void> {
  const channel = `redisson_lock__channel:{${name}}`;
  return waitFor(async () => given() || (await world.redis.listeners(channel)) >= 1, { what: `a Java waiter subscribed to ${channel}` });
}

/**
 * 1. Exclusion: Java threads of two JVMs and Node callers of two modules run the lost-update probe
 * (GET, pause, SET) under one lock; every increment counts. Both languages hold and wait here.
 */
export async function exclusion(world: PlainLockWorld, layout: Layout): Promise<void> {
  const name = world.fresh(`excl-${layout}`);
  const counter = `${name}:counter`;
  const rounds = 5;
  const gapMs = 10; // most of each hold is the gap: without exclusion the two languages overlap at once
  const [n1, n2] = world.node(layout);
  const java = [world.a.holder(`e1-${layout}`), world.a.holder(`e2-${layout}`), world.b.holder(`e1-${layout}`), world.b.holder(`e2-${layout}`)];
  const javaRuns = java.map(async (holder) => {
    for (let i = 0; i < rounds; i++) {
      await holder.lock(name, { timeoutMs: 30_000 });
      await holder.incr(counter, gapMs);
      await holder.unlock(name);
    }
  });
  const nodeRuns = [n1, n1, n2, n2].map(async (node) => {
    for (let i = 0; i < rounds; i++) {
      await node.locks.run(
        name,
        async () => {
          const value = Number((await world.redis.raw.get(counter)) ?? 0);
          await sleep(gapMs);
          await world.redis.raw.set(counter, String(value + 1));
        },
        { waitTime: 30_000 },
      );
    }
  });
  await Promise.all([...javaRuns, ...nodeRuns]);
  const expected = (java.length + 4) * rounds;
  const total = Number(await world.redis.raw.get(counter));
  check(total === expected, 'lost-update', () => `${expected} increments under the lock left ${total}`);
}

/**
 * 2. Wake-up: the other language's waiter, refused and subscribed before the release, gets the lock
 * within ~100 ms of it (median of 5 hand-offs, each under 1 s), with a 30 s lease (not by expiry).
 */
export async function wakeUp(world: PlainLockWorld, layout: Layout, direction: Direction): Promise<void> {
  const latencies: number[] = [];
  const [node] = world.node(layout);
  for (let i = 0; i < 5; i++) {
    const name = world.fresh(`wake-${layout}-${direction}`);
    let acquiredAt = 0;
    let releasedAt: number;
    let got: boolean;
    if (direction === 'java-holds') {
      const holder = world.a.holder(`wh-${layout}`);
      await holder.lock(name, { leaseMs: 30_000 });
      const lock = node.locks.getLock(name);
      await nodeRefused(lock, 'before the release').catch(async (error) => {
        await holder.unlock(name);
        throw error;
      });
      const waiting = lock.tryLock({ waitTime: 10_000, leaseTime: 30_000 }).then((ok) => ((acquiredAt = Date.now()), ok));
      await nodeAsleep(node, name, () => acquiredAt !== 0);
      check(acquiredAt === 0, 'not-excluded', () => `the Node waiter got ${name} before the Java release`);
      releasedAt = Date.now();
      await holder.unlock(name);
      got = await waiting;
      if (got) await lock.unlock();
    } else {
      const lock = node.locks.getLock(name);
      await lock.lock({ leaseTime: 30_000 });
      const waiter = world.b.holder(`ww-${layout}`);
      await javaRefused(waiter, name, 'before the release').catch(async (error) => {
        await lock.unlock();
        throw error;
      });
      const waiting = waiter.tryLock(name, 10_000, { leaseMs: 30_000 }).then((ok) => ((acquiredAt = Date.now()), ok));
      await javaSubscribed(world, name, () => acquiredAt !== 0);
      check(acquiredAt === 0, 'not-excluded', () => `the Java waiter got ${name} before the Node release`);
      releasedAt = Date.now();
      await lock.unlock();
      got = await waiting;
      if (got) await waiter.unlock(name);
    }
    check(got, 'not-woken', () => `the waiter did not get ${name} within 10 s of the release`);
    latencies.push(acquiredAt - releasedAt);
  }
  check(Math.max(...latencies) < 1_000, 'slow-wake', () => `hand-offs took ${latencies.join(', ')} ms`);
  check(median(latencies) <= 100, 'slow-wake', () => `median hand-off ${median(latencies)} ms (${latencies.join(', ')})`);
}

/** 3. Re-entry: the holder takes the lock twice (count 2 in its hash field); the other side is refused until both unlocks. */
export async function reentry(world: PlainLockWorld, layout: Layout, direction: Direction): Promise<void> {
  const name = world.fresh(`reentry-${layout}-${direction}`);
  const [node] = world.node(layout);
  if (direction === 'java-holds') {
    const holder = world.a.holder(`rh-${layout}`);
    const lock = node.locks.getLock(name);
    await holder.lock(name);
    await holder.lock(name);
    try {
      await nodeRefused(lock, 'held twice');
      const owner = await holder.owner();
      const field = await world.redis.raw.hget(name, owner);
      check(field === '2', 'wrong-count', () => `HGET ${name} ${owner} = ${field} after two Java locks`);
      await holder.unlock(name);
      await nodeRefused(lock, 'held once more');
      await holder.unlock(name);
    } finally {
      if (await holder.isHeldByThisThread(name)) await holder.forceUnlock(name);
    }
    check(await lock.tryLock(), 'not-released', () => `Node was refused ${name} after both Java unlocks`);
    await lock.unlock();
  } else {
    const lock = node.locks.getLock(name);
    const waiter = world.b.holder(`rw-${layout}`);
    await lock.lock();
    await lock.lock();
    try {
      await javaRefused(waiter, name, 'held twice');
      // The owner id is the lock object's (BaseLock.ownerId): Redisson's `<uuid>:<n>` shape.
      const owner = (lock as unknown as { ownerId: string }).ownerId;
      const fields = await world.redis.raw.hgetall(name);
      check(fields[owner] === '2' && Object.keys(fields).length === 1, 'wrong-count', () => `HGETALL ${name} = ${JSON.stringify(fields)} after two Node locks by ${owner}`);
      await lock.unlock();
      await javaRefused(waiter, name, 'held once more');
      await lock.unlock();
    } finally {
      while ((await lock.getHoldCount()) > 0) await lock.unlock();
    }
    check(await waiter.tryLock(name, 0), 'not-released', () => `Java was refused ${name} after both Node unlocks`);
    await waiter.unlock(name);
  }
}

/** 4. Renewal: a watchdog-kept hold lives 3 x the watchdog timeout; the other side is refused throughout; 0 < PTTL <= watchdog. */
export async function renewal(world: PlainLockWorld, layout: Layout, direction: Direction): Promise<void> {
  const name = world.fresh(`renew-${layout}-${direction}`);
  const [node] = world.node(layout);
  const holder = world.a.holder(`nh-${layout}-${direction}`);
  const lock = node.locks.getLock(name);
  if (direction === 'java-holds') await holder.lock(name);
  else await lock.lock();
  try {
    const until = Date.now() + 3 * world.watchdogMs;
    while (Date.now() < until) {
      if (direction === 'java-holds') await nodeRefused(lock, 'while the watchdog renews');
      else await javaRefused(holder, name, 'while the watchdog renews');
      const pttl = await world.redis.raw.pttl(name);
      check(pttl > 0 && pttl <= world.watchdogMs, 'not-renewed', () => `PTTL ${name} = ${pttl} (watchdog ${world.watchdogMs} ms)`);
      await sleep(200);
    }
  } finally {
    if (direction === 'java-holds') await holder.unlock(name);
    else await lock.unlock();
  }
}

/**
 * 5. A killed holder (SIGKILLed JVM or Node child): the other side gets in after the kill, when the
 * lease left at the kill has run out and within the watchdog timeout, never before.
 */
export async function killedHolder(world: PlainLockWorld, layout: Layout, direction: Direction): Promise<void> {
  const name = world.fresh(`killed-${layout}-${direction}`);
  const [node] = world.node(layout);
  let acquiredAt = 0;
  let killedAt = 0;
  let pttlAtKill = 0;
  let got: boolean;
  if (direction === 'java-holds') {
    const doomed = await world.doomedJava();
    const holder = doomed.holder(`k-${layout}`);
    await holder.lock(name);
    const lock = node.locks.getLock(name);
    try {
      for (const until = Date.now() + 1.5 * world.watchdogMs; Date.now() < until; await sleep(200)) await nodeRefused(lock, 'before the kill');
    } catch (error) {
      await holder.unlock(name); // the JVM stays for another run
      throw error;
    }
    const waiting = lock.tryLock({ waitTime: 10_000 }).then((ok) => ((acquiredAt = Date.now()), ok));
    await nodeAsleep(node, name, () => acquiredAt !== 0);
    check(acquiredAt === 0, 'not-excluded', () => `the Node waiter got ${name} before the JVM was killed`);
    pttlAtKill = await world.redis.raw.pttl(name);
    killedAt = Date.now();
    await doomed.kill();
    got = await waiting;
    if (got) await lock.unlock();
  } else {
    const child = await nodeHolderChild(world.redis, layout, name, world.watchdogMs);
    const waiter = world.b.holder(`kw-${layout}`);
    try {
      for (const until = Date.now() + 1.5 * world.watchdogMs; Date.now() < until; await sleep(200)) await javaRefused(waiter, name, 'before the kill');
      const waiting = waiter.tryLock(name, 10_000).then((ok) => ((acquiredAt = Date.now()), ok));
      await javaSubscribed(world, name, () => acquiredAt !== 0);
      check(acquiredAt === 0, 'not-excluded', () => `the Java waiter got ${name} before the Node child was killed`);
      pttlAtKill = await world.redis.raw.pttl(name);
      killedAt = Date.now();
      await child.kill();
      got = await waiting;
      if (got) await waiter.unlock(name);
    } finally {
      await child.kill();
    }
  }
  check(got, 'not-freed', () => `${name} was not free within 10 s of the kill`);
  const after = acquiredAt - killedAt;
  // Nobody released it: the lease ran out (a renewal between the PTTL and the kill only delays that).
  check(after >= pttlAtKill - 300, 'freed-early', () => `${name} was acquired ${after} ms after the kill with ${pttlAtKill} ms of lease left`);
  check(after <= world.watchdogMs + 1_000, 'not-freed', () => `${name} was acquired ${after} ms after the kill (watchdog ${world.watchdogMs} ms)`);
}

/**
 * 9. Fencing: Java `RFencedLock` and Node (`fencedLocks`) acquisitions alternate 10 times, each
 * token greater than the one before; `redisson_lock_token:{N}` never expires.
 */
export async function fencing(world: PlainLockWorld, layout: Layout, direction: Direction): Promise<void> {
  const name = world.fresh(`fenced-${layout}-${direction}`);
  const node = world.fenced(layout);
  const java = world.a.holder(`f-${layout}-${direction}`);
  const tokens: bigint[] = [];
  for (let i = 0; i < 10; i++) {
    const javaTurn = (i % 2 === 0) === (direction === 'java-holds');
    let token: bigint;
    if (javaTurn) {
      token = await java.fencedLock(name);
      await java.fencedUnlock(name);
    } else {
      const lock = node.locks.getLock(name);
      await lock.lock();
      const nodeToken = lock.getFencingToken();
      await lock.unlock();
      check(nodeToken !== undefined, 'no-token', () => `a Node hold of ${name} had no fencing token`);
      token = BigInt(nodeToken);
    }
    const previous = tokens[tokens.length - 1];
    tokens.push(token);
    check(previous === undefined || token > previous, 'token-regressed', () => `tokens ${tokens.join(', ')} (${javaTurn ? 'Java' : 'Node'} last)`);
  }
  const pttl = await world.redis.raw.pttl(`redisson_lock_token:{${name}}`);
  check(pttl === -1, 'token-expires', () => `PTTL redisson_lock_token:{${name}} = ${pttl}`);
}
