import { Args, Query, Resolver } from '@nestjs/graphql';
import { DistributedLock } from '../../lib';

/** The GraphQL resolver of the transport tests (Apollo in Jest, Mercurius in a child process). */
@Resolver()
export class ReportResolver {
  @Query(() => String)
  @DistributedLock('gql-report:#id', { waitTime: 0 })
  async report(@Args('id') id: string) {
    return `report ${id}`;
  }
}
