/**
 * Where a hand-off's time goes (issue 44): two processes, a holder and a waiter, through the delay
 * relay (a real round trip), this library's `LockService.run` in both. Each round the waiter asks
 * while the holder holds, sleeps in line, and the holder's body ends; stamped on the machine's
 * monotonic clock:
 *   body end (holder) -> release written to ioredis (holder: the library's release path)
 *   -> grant message heard by the waiter's subscriber (network both ways + the release script)
 *   -> waiter's body start (the grant's handling: check, hold record, the acquisition's promise)
 * next to PUBLISH -> message between the same two processes (the floor: one message, one trip).
 * The release script's own time in Redis comes from the slow log (every command logged).
 *
 *   npx tsc -p bench/tsconfig.json && node dist/bench/profiles/handoff-trace.js [handoffs] [rttMs]
 *
 * Defaults: 300 hand-offs, 0.5 ms RTT. Medians after the first 20 (warm-up). Only ioredis's own
 * `sendCommand` and `emit` are wrapped (to stamp them); the library runs as shipped.
 */
import { ChildProcess, fork } from 'node:child_process';
import Redis from 'ioredis';
import { now, sleep } from '../harness/clock';
import { pinningAvailable, REDIS_CORE } from '../harness/cpu';
import { startDelayRelay } from '../harness/delay-relay';
import { adminClient, startBenchRedis } from '../harness/redis-server';
import { median } from '../harness/stats';

const LOCK = 'trace';
const FLOOR_CHANNEL = 'trace:floor';
const WARMUP = 20;
/** Hand-offs after the measured ones with the slow log on, for the release script's own time. */
const LOGGED = 30;

type Role = 'holder' | 'waiter';
interface Stamped {
  type: string;
  [field: string]: unknown;
}

/** The stamps one round yields, in ms. */
interface Round {
  floor: number;
  total: number;
  releasePath: number;
  releaseToMessage: number;
  messageToBody: number;
}

async function parent(handoffs: number, rttMs: number): Promise<void> {
  const redis = await startBenchRedis();
  const relay = await startDelayRelay(redis.port, Math.round((rttMs * 1000) / 2));
  const admin = adminClient(redis.url);
  const children = new Map<Role, ChildProcess>();
  const waiting = new Map<string, (message: Stamped) => void>();
  const next = (role: Role, type: string): Promise<Stamped> => new Promise((resolve) => waiting.set(`${role}:${type}`, resolve));
  for (const role of ['holder', 'waiter'] as const) {
    const child = fork(__filename, ['--child', role, relay.url], { stdio: 'inherit' });
    child.on('message', (message: Stamped) => {
      const key = `${role}:${message.type}`;
      const resolve = waiting.get(key);
      waiting.delete(key);
      resolve?.(message);
    });
    children.set(role, child);
  }
  const holder = children.get('holder')!;
  const waiter = children.get('waiter')!;
  await Promise.all([next('holder', 'ready'), next('waiter', 'ready')]);
  const rounds: Round[] = [];
  // The slow log (every command) only in a last window of its own: logging slows the scripts down.
  const loggedFrom = handoffs;
  for (let i = 0; i < handoffs + LOGGED; i++) {
    if (i === loggedFrom) {
      await admin.config('SET', 'slowlog-max-len', '100000');
      await admin.call('SLOWLOG', 'RESET');
      await admin.config('SET', 'slowlog-log-slower-than', '0');
    }
    const heard = next('waiter', 'floor');
    holder.send({ type: 'publish' });
    const floor = await heard;
    const held = next('holder', 'held');
    holder.send({ type: 'hold' });
    await held;
    const asked = next('waiter', 'asked');
    waiter.send({ type: 'ask' });
    await asked;
    // Asleep in line by now: its two attempts took two round trips.
    await sleep(10 + Math.random() * 10);
    const acquired = next('waiter', 'acquired');
    const released = next('holder', 'released');
    holder.send({ type: 'release' });
    const [w, h] = await Promise.all([acquired, released]);
    const bodyEnd = h.bodyEnd as number;
    const written = h.releaseWritten as number;
    const message = w.grantHeard as number;
    const bodyStart = w.bodyStart as number;
    rounds.push({
      floor: (floor.heardAt as number) - (floor.sentAt as number),
      total: bodyStart - bodyEnd,
      releasePath: written - bodyEnd,
      releaseToMessage: message - written,
      messageToBody: bodyStart - message,
    });
  }
  const measured = rounds.slice(WARMUP, loggedFrom);
  const p50 = (field: keyof Round): number => median(measured.map((round) => round[field]));
  const scripts = await releaseScriptMicros(admin);
  const load = (await import('node:os')).loadavg().map((value) => value.toFixed(2)).join(' ');
  const row = (label: string, ms: number): string => `| ${label} | ${ms.toFixed(3)} |`;
  console.log(`\nHand-off trace: ${measured.length} hand-offs after ${WARMUP}, RTT ${rttMs} ms asked (delay relay), Redis ${redis.version}, redis-server and the relay ${pinningAvailable() ? `on core ${REDIS_CORE}` : 'not pinned'}, the two processes not pinned, load average ${load}\n`);
  console.log('| step (p50 of each step separately) | ms |\n| :-- | --: |');
  console.log(row('PUBLISH -> message (the floor)', p50('floor')));
  console.log(row('body end -> body start (the hand-off)', p50('total')));
  console.log(row('  holder: body end -> release written to ioredis', p50('releasePath')));
  console.log(row('  release written -> grant message heard (relay both ways, the release script)', p50('releaseToMessage')));
  console.log(row('  waiter: grant message heard -> body start', p50('messageToBody')));
  console.log(row(`  of which the release script in Redis (slow log, p50 of ${LOGGED} more hand-offs)`, scripts / 1000));
  console.log(`\nhand-off / floor: ${(p50('total') / p50('floor')).toFixed(2)}x`);
  for (const child of children.values()) child.send({ type: 'exit' });
  await sleep(500);
  admin.disconnect();
  await relay.stop();
  await redis.stop();
}

/** The median duration (µs) of the release script's runs in the slow log (the script that also grants). */
async function releaseScriptMicros(admin: Redis): Promise<number> {
  const { createHash } = await import('node:crypto');
  const { LUA_SOURCES } = await import('../../lib/redis/lua-sources.generated');
  const sha = createHash('sha1').update(LUA_SOURCES['reentrant-release']).digest('hex');
  const entries = (await admin.call('SLOWLOG', 'GET', '100000')) as Array<[number, number, number, string[]]>;
  const durations = entries.filter((entry) => entry[3][0]?.toLowerCase() === 'evalsha' && entry[3][1] === sha).map((entry) => entry[2]);
  return durations.length > 0 ? median(durations) : Number.NaN;
}

async function child(role: Role, url: string): Promise<void> {
  // Stamps of ioredis's own calls: when the release is handed to ioredis, when a grant is heard.
  let releaseWritten = 0;
  let grantHeard = 0;
  let stamping = false;
  const proto = Redis.prototype as unknown as {
    sendCommand(command: { name: string }, ...rest: unknown[]): unknown;
    emit(event: string, ...args: unknown[]): boolean;
  };
  const send = proto.sendCommand;
  proto.sendCommand = function (this: unknown, command, ...rest) {
    if (stamping && command.name === 'evalsha' && releaseWritten === 0) releaseWritten = now();
    return send.call(this, command, ...rest);
  };
  const emit = proto.emit;
  proto.emit = function (this: unknown, event, ...args) {
    if (event === 'message' && grantHeard === 0 && String(args[1]).startsWith('granted:')) grantHeard = now();
    return emit.call(this, event, ...args);
  };
  const { createLockServiceAdapter } = await import('../adapters/nest-lock-service');
  const adapter = await createLockServiceAdapter(url);
  const publisher = new Redis(url);
  const subscriber = new Redis(url);
  await subscriber.subscribe(FLOOR_CHANNEL);
  subscriber.on('message', (channel: string, sentAt: string) => {
    if (channel === FLOOR_CHANNEL) process.send!({ type: 'floor', heardAt: now(), sentAt: Number(sentAt) });
  });
  let release: (() => void) | undefined;
  process.on('message', (message: Stamped) => {
    switch (message.type) {
      case 'publish':
        void publisher.publish(FLOOR_CHANNEL, String(now()));
        break;
      case 'hold': {
        let bodyEnd = 0;
        const released = new Promise<void>((resolve) => (release = resolve));
        void adapter
          .run(LOCK, async () => {
            process.send!({ type: 'held' });
            await released;
            releaseWritten = 0;
            stamping = true;
            bodyEnd = now();
          })
          .then(() => {
            // The release goes out after `run` resolved (it is not awaited): report a moment later.
            setTimeout(() => {
              stamping = false;
              process.send!({ type: 'released', bodyEnd, releaseWritten });
            }, 20);
          });
        break;
      }
      case 'release':
        release?.();
        break;
      case 'ask': {
        grantHeard = 0;
        let bodyStart = 0;
        const acquired = adapter.run(LOCK, async () => {
          bodyStart = now();
        });
        setTimeout(() => process.send!({ type: 'asked' }), 5);
        void acquired.then(() => process.send!({ type: 'acquired', bodyStart, grantHeard }));
        break;
      }
      case 'exit':
        void adapter.close().finally(() => process.exit(0));
        break;
    }
  });
  process.send!({ type: 'ready' });
}

if (process.argv[2] === '--child') {
  void child(process.argv[3] as Role, process.argv[4]);
} else {
  const handoffs = Number(process.argv[2] ?? 300);
  const rttMs = Number(process.argv[3] ?? 0.5);
  parent(handoffs, rttMs).catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
