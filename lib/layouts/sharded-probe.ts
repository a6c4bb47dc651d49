import type { Cluster } from 'ioredis';
import { withTimeout } from '../redis/bounded-call';
import { describeStartupNodes } from '../redis/redis-client';
import { REDISSON_PROBE_DISAGREE, REDISSON_PROBE_INCONCLUSIVE, REDISSON_SHARDED_NEEDS_7 } from '../messages/redisson.messages';

/** A reply that says the server has no sharded pub/sub (Redis before 7.0), as opposed to "could not ask". */
const NO_SHARDED_PUBSUB = /unknown subcommand|unknown command|wrong number of arguments/i;

type Answer = { node: string; ok: true } | { node: string; ok: false; unsupported: boolean; cause: string };

/**
 * Whether Redisson's cluster mode, with `shardedSubscriptionMode` AUTO, uses sharded pub/sub on this
 * cluster: Redisson asks `PUBSUB SHARDNUMSUB` and uses SPUBLISH/SSUBSCRIBE when it succeeds. It asks
 * one node; here every master is asked, and anything but one clear answer from all of them fails the
 * start, since the two sides would then wake each other on different channels
 * (docs/redisson-interop.md#sharded-pub-sub).
 */
export async function probeShardedPubSub(cluster: Cluster, timeoutMs: number, mode: 'auto' | 'on'): Promise<boolean> {
  const nodes = describeStartupNodes(cluster);
  try {
    if (cluster.status === 'wait') await withTimeout(cluster.connect(), timeoutMs);
    else await withTimeout(cluster.ping(), timeoutMs);
  } catch (error) {
    throw new Error(REDISSON_PROBE_INCONCLUSIVE(nodes, nodes, (error as Error).message));
  }
  const masters = cluster.nodes('master');
  const answers: Answer[] = await Promise.all(
    masters.map((node) => {
      const address = `${node.options.host}:${node.options.port}`;
      return withTimeout(node.call('PUBSUB', 'SHARDNUMSUB'), timeoutMs).then(
        (): Answer => ({ node: address, ok: true }),
        (error: Error): Answer => ({ node: address, ok: false, unsupported: NO_SHARDED_PUBSUB.test(error.message), cause: error.message }),
      );
    }),
  );
  const works = answers.filter((answer) => answer.ok);
  const fails = answers.filter((answer): answer is Extract<Answer, { ok: false }> => !answer.ok);
  if (fails.length === 0 && works.length > 0) return true;
  if (mode === 'on') throw new Error(REDISSON_SHARDED_NEEDS_7(fails[0].node, fails[0].cause));
  const unclear = fails.find((answer) => !answer.unsupported);
  if (unclear || works.length + fails.length === 0) {
    throw new Error(REDISSON_PROBE_INCONCLUSIVE(nodes, unclear?.node ?? nodes, unclear?.cause ?? 'no master known'));
  }
  if (works.length > 0) throw new Error(REDISSON_PROBE_DISAGREE(works[0].node, fails[0].node, fails[0].cause));
  return false;
}
