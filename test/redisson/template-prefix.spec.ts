import { Injectable, Type } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { DistributedLock, DistributedSemaphore, InvalidLockNameError, KeyTemplateError, LockModule, type LockModuleOptions } from '../../lib';
import { startRedis, type TestRedis } from '../support/redis-server';

/**
 * Issue 42 (DESIGN §25): in layout 'redisson' a lock name is a bare Redis key, so a request value
 * must not choose the whole key. A string key template there must start with constant text, unless
 * the module maps names with `redisson.nameMapper`; otherwise the bootstrap fails, naming the
 * decorator, class, method, template and the fix. Names from key functions are checked at call time
 * (a name shaped like a derived key: InvalidLockNameError).
 */
describe("layout 'redisson': a string key template needs a constant prefix (bootstrap)", () => {
  let redis: TestRedis;
  let raw: Redis;
  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
  });
  afterAll(async () => {
    await redis?.stop();
  });

  const redissonOptions = (extra: Partial<LockModuleOptions> = {}): LockModuleOptions => ({ redis: redis.url, layout: 'redisson', ...extra });

  async function boot(provider: Type<unknown>, options: LockModuleOptions): Promise<TestingModule> {
    const moduleRef = await Test.createTestingModule({ imports: [LockModule.forRoot(options)], providers: [provider] }).compile();
    moduleRef.useLogger(false);
    try {
      return await moduleRef.init();
    } catch (error) {
      await moduleRef.close().catch(() => undefined);
      throw error;
    }
  }

  @Injectable()
  class OrdersService {
    @DistributedLock('#id')
    async checkout(id: string): Promise<string> {
      return `checked out ${id}`;
    }
  }

  @Injectable()
  class StockService {
    @DistributedSemaphore('#tenant', { permits: 3 })
    async reserve(tenant: string): Promise<void> {}
  }

  @Injectable()
  class TransfersService {
    @DistributedLock(['stock:#from', '#to'])
    async move(from: string, to: string): Promise<void> {}
  }

  @Injectable()
  class TokenService {
    @DistributedLock('redisson_lock_token:#id')
    async touch(id: string): Promise<void> {}
  }

  @Injectable()
  class FineService {
    @DistributedLock('order:#id')
    async checkout(id: string): Promise<string> {
      return `checked out ${id}`;
    }

    @DistributedLock((name: string) => name)
    async byFunction(name: string): Promise<string> {
      return `ran ${name}`;
    }

    @DistributedSemaphore('stock:#sku', { permits: 3 })
    async reserve(sku: string): Promise<string> {
      return `reserved ${sku}`;
    }
  }

  it.each<[string, Type<unknown>, string]>([
    ['@DistributedLock', OrdersService, '@DistributedLock on OrdersService.checkout: key template "#id" starts with a placeholder'],
    ['@DistributedSemaphore', StockService, '@DistributedSemaphore on StockService.reserve: key template "#tenant" starts with a placeholder'],
    ['an array of templates', TransfersService, '@DistributedLock on TransfersService.move: key template "#to" starts with a placeholder'],
  ])('%s starting with a placeholder is refused, naming class, method, template and the fix', async (_what, provider, start) => {
    const error = await boot(provider, redissonOptions()).then(
      () => new Error('bootstrapped'),
      (e: unknown) => e as Error,
    );
    expect(error).toBeInstanceOf(KeyTemplateError);
    expect(error.message.startsWith(start)).toBe(true);
    expect(error.message).toContain("start the template with a constant prefix that no other key of this Redis uses (such as 'order:#id')");
    expect(error.message).toContain('redisson.nameMapper');
  });

  it('a prefix every name of which is refused (a derived key shape) fails at bootstrap too', async () => {
    await expect(boot(TokenService, redissonOptions())).rejects.toThrow(
      /@DistributedLock on TokenService\.touch: key template "redisson_lock_token:#id" cannot make a lock name: every name it makes is refused \(it starts with 'redisson_'/,
    );
  });

  it('with a nameMapper, or in the native layout, a template may start with a placeholder', async () => {
    const mapped = await boot(OrdersService, redissonOptions({ redisson: { nameMapper: (name: string) => `app:${name}` } }));
    const native = await boot(OrdersService, { redis: redis.url, keyPrefix: 'tpl:' });
    try {
      expect(await mapped.get(OrdersService).checkout('7')).toBe('checked out 7');
      expect(await native.get(OrdersService).checkout('7')).toBe('checked out 7');
    } finally {
      await mapped.close();
      await native.close();
    }
  });

  it("a constant prefix boots; a key function's derived-key name is refused at call time (400), and the body never runs", async () => {
    const app = await boot(FineService, redissonOptions());
    try {
      const service = app.get(FineService);
      expect(await service.checkout('8')).toBe('checked out 8');
      expect(await service.reserve('a')).toBe('reserved a');
      expect(await service.byFunction('report:1')).toBe('ran report:1');
      for (const name of ['redisson_lock_token:{order:8}', '{order:8}:timeout', 'redisson_sc:{stock:a}']) {
        const error = await service.byFunction(name).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(InvalidLockNameError);
        expect(error).toMatchObject({ statusCode: 400 });
      }
      expect(await raw.exists('redisson_lock_token:{order:8}')).toBe(0);
    } finally {
      await app.close();
    }
  });
});
