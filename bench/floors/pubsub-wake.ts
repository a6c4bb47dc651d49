import { once } from 'node:events';
import Redis from 'ioredis';
import { now, sleep } from '../harness/clock';
import type { Job } from '../harness/messages';
import { median, percentile } from '../harness/stats';
import { WorkerProcess } from '../harness/worker-process';
import type { WorkerContext } from '../workloads/context';
import { TRIVIAL_SCRIPT } from './round-trips';

/**
 * The pub/sub hand-off floor: a PUBLISH from one process into a subscriber process that sat idle
 * 10-20 ms, which then makes one EVALSHA round trip (the attempt a woken waiter makes). It is the
 * chain a pub/sub lock's hand-off cannot beat: release (publish) -> wake -> attempt. Its first half,
 * PUBLISH -> message, is the floor of a hand-off that needs no further round trip (a lock granted in
 * the message itself); with BENCH_RTT_MS both processes talk to Redis through the delay relay, so
 * it is one round trip plus the wake-up.
 */
const CHANNEL = 'floor:wake';

interface PublisherStamps {
  readonly publishedAt: number[];
}
interface SubscriberStamps {
  readonly receivedAt: Array<number | null>;
  readonly answeredAt: Array<number | null>;
}

export async function wakeChild(context: WorkerContext): Promise<PublisherStamps | SubscriberStamps> {
  const { messages, gapMs, gapJitterMs } = context.job.params;
  const client = new Redis(context.job.redisUrl);
  await client.ping();
  if (context.job.role === 0) {
    const publishedAt: number[] = [];
    await context.parent.next('go');
    for (let i = 0; i < messages; i++) {
      await sleep(gapMs + Math.random() * gapJitterMs);
      publishedAt[i] = now();
      await client.publish(CHANNEL, String(i));
    }
    await sleep(50);
    client.disconnect();
    context.parent.send({ type: 'done' });
    return { publishedAt };
  }
  const subscriber = client.duplicate();
  // ioredis writes SUBSCRIBE before its ready check's INFO, which Redis then refuses on a subscribed
  // connection: ioredis drops it and reconnects, and the floor loses its messages. A round trip of
  // delay (BENCH_RTT_MS) makes that race likely, so subscribe only once the connection is ready.
  if (subscriber.status !== 'ready') await once(subscriber, 'ready');
  const sha = String(await client.script('LOAD', TRIVIAL_SCRIPT));
  const receivedAt = new Array<number | null>(messages).fill(null);
  const answeredAt = new Array<number | null>(messages).fill(null);
  subscriber.on('message', (_channel: string, message: string) => {
    const i = Number(message);
    receivedAt[i] = now();
    void client.evalsha(sha, 1, 'floor:key').then(() => {
      answeredAt[i] = now();
    });
  });
  await subscriber.subscribe(CHANNEL);
  context.parent.send({ type: 'ready' });
  await context.parent.next('done');
  await sleep(20);
  subscriber.disconnect();
  client.disconnect();
  return { receivedAt, answeredAt };
}

export interface WakeFloor {
  readonly published: number;
  /** Messages that reached the subscriber (all of them, unless something is wrong). */
  readonly received: number;
  /** PUBLISH sent -> message handled in the idle subscriber process. */
  readonly publishToMessageP50Ms: number;
  readonly publishToMessageP99Ms: number;
  /** ... plus the one EVALSHA round trip: the pub/sub hand-off floor. */
  readonly wakeFloorP50Ms: number;
  readonly wakeFloorP99Ms: number;
}

export async function runWakeFloor(redisUrl: string, params: Readonly<Record<string, number>>, timeoutMs: number): Promise<WakeFloor> {
  const [publisher, subscriber] = [0, 1].map(
    (role) => new WorkerProcess({ task: 'floor-wake', redisUrl, role, params } satisfies Job, timeoutMs),
  );
  try {
    publisher.on('done', (message) => subscriber.send(message));
    await new Promise<void>((resolve, reject) => {
      subscriber.on('ready', () => resolve());
      subscriber.result.catch(reject);
    });
    publisher.send({ type: 'go' });
    const { publishedAt } = (await publisher.result) as PublisherStamps;
    const { receivedAt, answeredAt } = (await subscriber.result) as SubscriberStamps;
    const toMessage: number[] = [];
    const toAnswer: number[] = [];
    publishedAt.forEach((published, i) => {
      const received = receivedAt[i];
      const answered = answeredAt[i];
      if (received !== null) toMessage.push(received - published);
      if (answered !== null) toAnswer.push(answered - published);
    });
    return {
      published: publishedAt.length,
      received: toMessage.length,
      publishToMessageP50Ms: median(toMessage),
      publishToMessageP99Ms: percentile(toMessage, 99),
      wakeFloorP50Ms: median(toAnswer),
      wakeFloorP99Ms: percentile(toAnswer, 99),
    };
  } finally {
    publisher.kill();
    subscriber.kill();
    await Promise.all([publisher.exited(), subscriber.exited()]);
  }
}
