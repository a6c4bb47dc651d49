import { Inject, Injectable, Module, Type } from '@nestjs/common';
import { Test, TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { DistributedLock, KeyTemplateError, LockModule, LockModuleOptions, LockService } from '../lib';
import { LockEngine } from '../lib/engine/lock-engine';
import { startRedis, TestRedis } from './support/redis-server';
import { releasesSettled } from './support/lock-app';

/**
 * Key templates evaluated on real Redis (which lock key each form actually takes), the errors a
 * decorated method can meet at bootstrap (before any Redis connection) and at call time (before its
 * body runs).
 */

/** What the lock bodies report: the lock keys that exist in Redis while they run. */
const HELD_KEYS = Symbol('HELD_KEYS');
type HeldKeys = () => Promise<string[]>;

interface CartDto {
  customer?: { id?: unknown };
  items?: Array<{ sku?: unknown }>;
}

@Injectable()
class TemplateService {
  constructor(@Inject(HELD_KEYS) private readonly held: HeldKeys) {}

  @DistributedLock('order:#id')
  async byName(id: string): Promise<string[]> {
    return this.held();
  }

  @DistributedLock('cart:#dto.customer.id:#dto.items[0].sku')
  async byPath(dto: CartDto): Promise<string[]> {
    return this.held();
  }

  @DistributedLock('user:#{id}-profile')
  async braced(id: string): Promise<string[]> {
    return this.held();
  }

  @DistributedLock('job:#0/#p1/#a2')
  async positional(first: string, second: string, third: string): Promise<string[]> {
    return this.held();
  }

  /** A real parameter named `p0` wins over the position it would otherwise mean. */
  @DistributedLock('real:#p0')
  async realP0(p1: string, p0: string): Promise<string[]> {
    return this.held();
  }

  @DistributedLock('sku:#0.sku')
  async destructured({ sku }: { sku: string }): Promise<string[]> {
    return this.held();
  }

  @DistributedLock('rest:#skus[1]')
  async rest(...skus: string[]): Promise<string[]> {
    return this.held();
  }

  @DistributedLock(['stock:#a', 'stock:#b'])
  async several(a: string, b: string): Promise<string[]> {
    return this.held();
  }

  @DistributedLock((tenant: string, id: string) => `${tenant}/doc:${id}`)
  async keyFunction(tenant: string, id: string): Promise<string[]> {
    return this.held();
  }

  @DistributedLock((ids: string[]) => ids.map((id) => `seat:${id}`))
  async keyFunctionMany(ids: string[]): Promise<string[]> {
    return this.held();
  }

  @DistributedLock(() => '')
  async emptyKeyFunction(): Promise<string[]> {
    return this.held();
  }
}

describe('@DistributedLock key templates and errors', () => {
  let redis: TestRedis;
  let raw: Redis;
  let app: TestingModule;
  const ran = jest.fn();
  /** Lock keys (not channels or the short-lived release records) under the suite's prefix. */
  const lockKeys = async (pattern = 'tpl:*') => (await raw.keys(pattern)).filter((key) => !/:(channel|fence|rq:.*)$/.test(key)).sort();
  const held: HeldKeys = async () => {
    ran();
    return lockKeys();
  };

  const options = (): LockModuleOptions => ({ redis: redis.url, keyPrefix: 'tpl:' });

  /** Bootstraps an application with one provider; resolves with the bootstrap error. */
  async function bootstrapError(provider: Type<unknown>): Promise<Error> {
    const moduleRef = await Test.createTestingModule({ imports: [LockModule.forRoot(options())], providers: [provider] }).compile();
    moduleRef.useLogger(false);
    try {
      await moduleRef.init();
    } catch (error) {
      return error as Error;
    } finally {
      // close() rethrows the failed bootstrap's error.
      await moduleRef.close().catch(() => undefined);
    }
    throw new Error(`${provider.name} bootstrapped`);
  }

  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
    const moduleRef = await Test.createTestingModule({
      imports: [LockModule.forRoot(options())],
      providers: [TemplateService, { provide: HELD_KEYS, useValue: held }],
    }).compile();
    moduleRef.useLogger(false);
    app = await moduleRef.init();
  });
  afterAll(async () => {
    await app?.close();
    await redis?.stop();
  });
  beforeEach(() => ran.mockClear());

  describe('each template form takes the lock it names', () => {
    const service = () => app.get(TemplateService);

    it.each<[string, (s: TemplateService) => Promise<string[]>, string[]]>([
      ['#name', (s) => s.byName('7'), ['tpl:{order:7}']],
      ['#a.path[0].more', (s) => s.byPath({ customer: { id: 42 }, items: [{ sku: 'A' }] }), ['tpl:{cart:42:A}']],
      ['#{braced}-text', (s) => s.braced('u1'), ['tpl:{user:u1-profile}']],
      ['#0 / #p1 / #a2', (s) => s.positional('x', 'y', 'z'), ['tpl:{job:x/y/z}']],
      ['#p0 naming a real parameter', (s) => s.realP0('first', 'second'), ['tpl:{real:second}']],
      ['#0.field of a destructured parameter', (s) => s.destructured({ sku: 'S1' }), ['tpl:{sku:S1}']],
      ['#rest[1]', (s) => s.rest('r0', 'r1', 'r2'), ['tpl:{rest:r1}']],
      ['an array of templates (one multi-lock)', (s) => s.several('b', 'a'), ['tpl:{stock:a}', 'tpl:{stock:b}']],
      ['a key function', (s) => s.keyFunction('acme', '9'), ['tpl:{acme/doc:9}']],
      ['a key function returning several keys', (s) => s.keyFunctionMany(['2', '1']), ['tpl:{seat:1}', 'tpl:{seat:2}']],
    ])('%s', async (_form, call, expected) => {
      expect(await call(service())).toEqual(expected);
      await releasesSettled(app);
      expect(await lockKeys()).toEqual([]); // released afterwards
    });
  });

  describe('at call time, an unusable value throws KeyTemplateError and the body never runs', () => {
    it.each<[string, unknown]>([
      ['undefined', undefined],
      ['null', null],
      ['an empty string', ''],
      ['a plain object', { id: 1 }],
    ])('%s', async (what, value) => {
      const error = await app.get(TemplateService).byName(value as string).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(KeyTemplateError);
      expect((error as Error).message).toContain('TemplateService.byName');
      expect((error as Error).message).toContain(`#id in "order:#id" is ${what === 'a plain object' ? 'an object' : what}`);
      expect(ran).not.toHaveBeenCalled();
    });

    it('a missing nested value names the part that was missing', async () => {
      const error = await app.get(TemplateService).byPath({ items: [{ sku: 'A' }] }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(KeyTemplateError);
      expect((error as Error).message).toContain('#dto.customer.id');
      expect((error as Error).message).toContain('#dto.customer is undefined');
      expect(ran).not.toHaveBeenCalled();
    });

    it('a key function returning an empty key', async () => {
      await expect(app.get(TemplateService).emptyKeyFunction()).rejects.toThrow(
        'Lock key for TemplateService.emptyKeyFunction not built: the key function returned an empty string',
      );
      expect(ran).not.toHaveBeenCalled();
    });
  });

  describe('at bootstrap', () => {
    it('a placeholder naming a parameter the method does not have fails, naming class, method and parameter', async () => {
      @Injectable()
      class PaymentService {
        @DistributedLock('order:#orderId')
        async pay(id: string, amount: number): Promise<void> {}
      }
      const error = await bootstrapError(PaymentService);
      expect(error).toBeInstanceOf(KeyTemplateError);
      expect(error.message).toBe(
        '@DistributedLock on PaymentService.pay: key template "order:#orderId" names parameter "orderId", ' +
          'which PaymentService.pay does not have (its parameters: id, amount). Did you mean #id?',
      );
    });

    it('a position past the parameters, a syntax error and a bad key fail', async () => {
      @Injectable()
      class PositionService {
        @DistributedLock('order:#3')
        async pay(id: string): Promise<void> {}
      }
      @Injectable()
      class SyntaxService {
        @DistributedLock('order:#{id')
        async pay(id: string): Promise<void> {}
      }
      @Injectable()
      class KeyService {
        @DistributedLock(42 as unknown as string)
        async pay(id: string): Promise<void> {}
      }
      expect((await bootstrapError(PositionService)).message).toContain('PositionService.pay declares 1 parameter');
      expect((await bootstrapError(SyntaxService)).message).toContain("'#{' is never closed");
      expect((await bootstrapError(KeyService)).message).toContain('KeyService.pay: the key must be a template string');
    });

    it.each<[string, object, string]>([
      ['an unknown mode', { mode: 'exclusive' }, `option "mode" must be 'reentrant' | 'fair' | 'read' | 'write' (got "exclusive")`],
      ['a negative waitTime', { waitTime: -1 }, 'option "waitTime" must be a whole number of milliseconds >= 0, or Infinity (got -1)'],
      ['a fractional waitTime', { waitTime: 250.5 }, 'option "waitTime" must be a whole number of milliseconds >= 0, or Infinity (got 250.5)'],
      ['a zero leaseTime', { leaseTime: 0 }, 'option "leaseTime" must be a whole number of milliseconds > 0 (got 0)'],
      ['a fractional leaseTime', { leaseTime: 1500.5 }, 'option "leaseTime" must be a whole number of milliseconds > 0 (got 1500.5)'],
      ['a fractional minHoldTime', { minHoldTime: 10.5 }, 'option "minHoldTime" must be a whole number of milliseconds >= 0 (got 10.5)'],
      ['an unknown option', { timeout: 5 }, 'option "timeout" must be one of the known options'],
    ])('%s fails, naming the option and value', async (_what, lockOptions, message) => {
      @Injectable()
      class OptionService {
        @DistributedLock('order:#id', lockOptions)
        async pay(id: string): Promise<void> {}
      }
      expect((await bootstrapError(OptionService)).message).toContain(`@DistributedLock on OptionService.pay: ${message}`);
    });

    it('a method declared to return something other than a Promise fails (at bootstrap, and in TypeScript at compile time)', async () => {
      @Injectable()
      class SyncService {
        // @ts-expect-error TS1241: the decorator's type takes only methods returning a Promise (npm run typecheck proves it).
        @DistributedLock('order:#id')
        pay(id: string): string {
          return id;
        }
      }
      expect((await bootstrapError(SyncService)).message).toContain('SyncService.pay: the method is declared to return String');
    });

    it('two lock decorators on one method fail', async () => {
      @Injectable()
      class StackedService {
        @DistributedLock('a:#id')
        @DistributedLock('b:#id')
        async pay(id: string): Promise<void> {}
      }
      expect((await bootstrapError(StackedService)).message).toContain('StackedService.pay: the method has two lock decorators');
    });

    it('fails before any Redis connection is opened', async () => {
      @Injectable()
      class BrokenService {
        @DistributedLock('order:#nope')
        async pay(id: string): Promise<void> {}
      }
      const connections = async () => String(await raw.client('LIST')).trim().split('\n').length;
      const before = await connections();
      const moduleRef = await Test.createTestingModule({ imports: [LockModule.forRoot(options())], providers: [BrokenService] }).compile();
      moduleRef.useLogger(false);
      await expect(moduleRef.init()).rejects.toThrow(KeyTemplateError);
      expect(moduleRef.get(LockEngine).client.status).toBe('wait'); // lazy client, never connected
      expect(await connections()).toBe(before);
      await moduleRef.close().catch(() => undefined);
    });

    it('a static method is refused where it is decorated', () => {
      expect(() => {
        class StaticService {
          @DistributedLock('x')
          static async run(): Promise<void> {}
        }
        return StaticService;
      }).toThrow('@DistributedLock on StaticService.run: static methods cannot be locked');
    });

    it('two global LockModules (the default) are refused at bootstrap, naming the fix', async () => {
      @Injectable()
      class SharedService {
        @DistributedLock('x:#id')
        async run(id: string): Promise<void> {}
      }
      const moduleRef = await Test.createTestingModule({
        imports: [LockModule.forRoot(options()), LockModule.forRoot({ ...options(), keyPrefix: 'other:' })],
        providers: [SharedService],
      }).compile();
      moduleRef.useLogger(false);
      await expect(moduleRef.init()).rejects.toThrow(
        'This application registers 2 LockModule instances as global (LockModule is global by default), so which one LockService and the decorators would use is not defined. Keep one global and give every other LockModule.forRoot()/forRootAsync() isGlobal: false',
      );
      await moduleRef.close().catch(() => undefined);
    });

    it('two isGlobal: false LockModules that could both serve a provider fail instead of picking one', async () => {
      @Injectable()
      class SharedService {
        @DistributedLock('x:#id')
        async run(id: string): Promise<void> {}
      }
      const moduleRef = await Test.createTestingModule({
        imports: [LockModule.forRoot({ ...options(), isGlobal: false }), LockModule.forRoot({ ...options(), keyPrefix: 'other:', isGlobal: false })],
        providers: [SharedService],
      }).compile();
      moduleRef.useLogger(false);
      await expect(moduleRef.init()).rejects.toThrow('SharedService.run is decorated with @DistributedLock and 2 LockModule instances could serve it');
      await moduleRef.close().catch(() => undefined);
    });

    it('with a global LockModule and an isGlobal: false one in a feature module, each module is served by the one its injection gets', async () => {
      @Injectable()
      class FeatureService {
        constructor(readonly locks: LockService) {}
        @DistributedLock('feature:#id')
        async run(id: string): Promise<string[]> {
          return [...(await lockKeys('feature-prefix:*')), ...(await lockKeys('tpl:*'))];
        }
      }
      @Module({ imports: [LockModule.forRoot({ ...options(), keyPrefix: 'feature-prefix:', isGlobal: false })], providers: [FeatureService] })
      class FeatureModule {}
      @Injectable()
      class RootService {
        @DistributedLock('root:#id')
        async run(id: string): Promise<string[]> {
          return [...(await lockKeys('feature-prefix:*')), ...(await lockKeys('tpl:*'))];
        }
      }
      const moduleRef = await Test.createTestingModule({ imports: [LockModule.forRoot(options()), FeatureModule], providers: [RootService] }).compile();
      moduleRef.useLogger(false);
      await moduleRef.init();
      try {
        const feature = moduleRef.get(FeatureService);
        expect(await feature.run('1')).toEqual(['feature-prefix:{feature:1}']);
        expect(await feature.locks.run('injected:1', () => lockKeys('feature-prefix:*'))).toEqual(['feature-prefix:{injected:1}']);
        expect(await moduleRef.get(RootService).run('2')).toEqual(['tpl:{root:2}']);
      } finally {
        await moduleRef.close();
      }
    });
  });
});
