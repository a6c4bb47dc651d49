import { startRedis, TestRedis } from './redis-server';

/**
 * `count` independent Redis servers (RedLock's masters: no replication, no cluster between them),
 * each with its own pause/resume/stop. If one fails to start, the others are stopped.
 */
export async function startRedisServers(count: number, extraArgs: readonly string[] = []): Promise<TestRedis[]> {
  const outcomes = await Promise.allSettled(Array.from({ length: count }, () => startRedis(extraArgs)));
  const started = outcomes.flatMap((o) => (o.status === 'fulfilled' ? [o.value] : []));
  const failed = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
  if (failed) {
    await Promise.all(started.map((s) => s.stop()));
    throw failed.reason;
  }
  return started;
}

const stopped = new WeakSet<TestRedis>();

/** Stops one server for good (a test's fault), once: `stopRedisServers` skips it afterwards. */
export async function stopRedisServer(server: TestRedis): Promise<void> {
  if (stopped.has(server)) return;
  stopped.add(server);
  await server.stop();
}

export async function stopRedisServers(servers: readonly TestRedis[] | undefined): Promise<void> {
  await Promise.all((servers ?? []).map(stopRedisServer));
}
