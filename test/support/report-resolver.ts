import { Args, Query, Resolver } from '@nestjs/graphql';
import { DistributedLock, LockDeadlockError } from '../../lib';

/**
 * The GraphQL resolver of the transport tests (Apollo in Jest, Mercurius in a child process): a
 * locked query, and one whose body is refused as a deadlock.
 */
@Resolver()
export class ReportResolver {
  @Query(() => String)
  @DistributedLock('gql-report:#id', { waitTime: 0 })
  async report(@Args('id') id: string) {
    return `report ${id}`;
  }

  /** Refused as a deadlock while holding `gql-a:#id` (the error built by hand, as the engine builds it). */
  @Query(() => String)
  @DistributedLock('gql-a:#id')
  async transfer(@Args('id') id: string): Promise<string> {
    throw new LockDeadlockError([
      { lock: `gql-b:${id}`, owner: 'c0ffee:2', instance: { host: 'api-1', pid: 4242 } },
      { lock: `gql-a:${id}`, owner: 'beef:1' },
    ]);
  }
}
