import 'reflect-metadata';

// Metadata keys Nest's own decorators write on a handler method (read here without importing the
// optional packages: @nestjs/microservices and @nestjs/graphql need not be installed).
const PATH_METADATA = 'path'; // @Get, @Post, ... (@nestjs/common)
const PATTERN_HANDLER_METADATA = 'microservices:handler_type'; // @MessagePattern: 1, @EventPattern: 2
const MESSAGE_PATTERN = 1;
const RESOLVER_TYPE_METADATA = 'graphql:resolver_type'; // @Query, @Mutation, @Subscription
const RESOLVER_PROPERTY_METADATA = 'graphql:resolve_property'; // @ResolveField

/**
 * What kind of handler `method` is when its caller waits for what it answers (an HTTP route, an RPC
 * `@MessagePattern`, a GraphQL query, mutation or field), or undefined (a `@Cron` job, a queue
 * consumer, an `@EventPattern` handler, a plain provider method). WebSocket `@SubscribeMessage`
 * handlers are not counted: most answer nothing, and a skipped one answers nothing either.
 */
export function answeringHandler(method: Function): string | undefined {
  if (Reflect.getMetadata(PATH_METADATA, method) !== undefined) return 'an HTTP route';
  if (Reflect.getMetadata(PATTERN_HANDLER_METADATA, method) === MESSAGE_PATTERN) return 'an RPC @MessagePattern handler';
  const resolverType: unknown = Reflect.getMetadata(RESOLVER_TYPE_METADATA, method);
  if (resolverType === 'Query' || resolverType === 'Mutation') return `a GraphQL @${resolverType} resolver`;
  if (Reflect.getMetadata(RESOLVER_PROPERTY_METADATA, method) === true) return 'a GraphQL @ResolveField resolver';
  return undefined;
}
