import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import { INestApplication, Module, type Type } from '@nestjs/common';
import { GraphQLModule } from '@nestjs/graphql';
import { Test } from '@nestjs/testing';
import { LockModule, type LockModuleOptions } from '../../lib';

/** A started Nest app serving `resolvers` over Apollo (code-first schema), with LockModule on `options`. */
export async function startApolloApp(options: LockModuleOptions, resolvers: Type[]): Promise<INestApplication> {
  @Module({
    imports: [
      LockModule.forRoot(options),
      GraphQLModule.forRoot<ApolloDriverConfig>({ driver: ApolloDriver, autoSchemaFile: true, playground: false }),
    ],
    providers: resolvers,
  })
  class GraphQLApp {}
  const moduleRef = await Test.createTestingModule({ imports: [GraphQLApp] }).compile();
  const app = moduleRef.createNestApplication({ logger: false });
  await app.init();
  return app;
}
