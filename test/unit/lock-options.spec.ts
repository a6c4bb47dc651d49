import Redis, { Cluster } from 'ioredis';
import { LOCK_OPTION_DEFAULTS, type LockModuleOptions, resolveLockOptions } from '../../lib/lock.options';

/**
 * The module options without Redis: every option's defaults, the values it refuses and a message
 * that names it (what a user sees at bootstrap). Clients are made with lazyConnect: never connected.
 */

const resolve = (options: Record<string, unknown>) => resolveLockOptions(options as LockModuleOptions);

describe('resolveLockOptions', () => {
  const clients: Array<Redis | Cluster> = [];
  const lazyRedis = () => {
    const client = new Redis({ lazyConnect: true });
    clients.push(client);
    return client;
  };
  const lazyCluster = () => {
    const client = new Cluster([], { lazyConnect: true });
    clients.push(client);
    return client;
  };
  afterAll(() => {
    for (const client of clients) client.disconnect();
  });

  it('fills in every default when nothing is given', () => {
    for (const options of [undefined, {}]) {
      const resolved = resolveLockOptions(options);
      expect(resolved).toMatchObject({
        ...LOCK_OPTION_DEFAULTS,
        redlock: undefined,
        telemetryLockNames: false,
      });
      expect(typeof resolved.clientName).toBe('string');
      expect(resolved.clientName.length).toBeGreaterThan(0);
    }
  });

  it('keeps the values given, and treats an option set to undefined as not given', () => {
    const client = lazyRedis();
    const resolved = resolve({
      redis: client,
      keyPrefix: '',
      watchdogTimeout: 30,
      defaultWaitTime: 0,
      fairLockWaiterTimeout: 30,
      redlock: { clients: ['redis://a:1', 'redis://b:1'], masterTimeout: 1 },
      syncReplicas: 2,
      syncReplicasTimeout: 1,
      commandTimeout: 1,
      shutdownTimeout: 0,
      clientName: 'orders-api',
      telemetryLockNames: true,
      maxNameLength: 200,
      deadlockCheckAfter: 0,
      isGlobal: true,
    });
    expect(resolved).toEqual({
      redis: client,
      keyPrefix: '',
      watchdogTimeout: 30,
      defaultWaitTime: 0,
      fairLockWaiterTimeout: 30,
      redlock: { clients: ['redis://a:1', 'redis://b:1'], masterTimeout: 1 },
      syncReplicas: 2,
      syncReplicasTimeout: 1,
      commandTimeout: 1,
      shutdownTimeout: 0,
      clientName: 'orders-api',
      telemetryLockNames: true,
      maxNameLength: 200,
      deadlockCheckAfter: 0,
      layout: 'native',
      redisson: undefined,
    });
    expect(resolve({ watchdogTimeout: undefined, keyPrefix: undefined }).watchdogTimeout).toBe(LOCK_OPTION_DEFAULTS.watchdogTimeout);
  });

  it.each([
    ['a redis:// URL', 'redis://127.0.0.1:6379/2'],
    ['a rediss:// URL', 'rediss://user:pw@example.com:6380'],
    ['a unix:// URL', 'unix:///tmp/redis.sock'],
    ['ioredis options', { host: '127.0.0.1', port: 6380 }],
  ])('accepts %s as redis', (_what, redis) => {
    expect(resolve({ redis }).redis).toEqual(redis);
  });

  it('accepts a Redis or Cluster instance as redis, as is', () => {
    const redis = lazyRedis();
    const cluster = lazyCluster();
    expect(resolve({ redis }).redis).toBe(redis);
    expect(resolve({ redis: cluster }).redis).toBe(cluster);
  });

  const milliseconds = (option: string, min: number) =>
    [min - 1, -1, Number.NaN, Number.POSITIVE_INFINITY, '1000', null, true, min + 1500.5].filter((v, i, all) => all.indexOf(v) === i).map(
      (value) => [option, value, `LockModule option "${option}" must be a whole number of milliseconds >= ${min}`] as const,
    );

  it.each([
    ['redis', 'localhost:6379', 'LockModule option "redis" must be an ioredis Redis/Cluster instance, ioredis options or a redis:// URL (got "localhost:6379")'],
    ['redis', 'redis://', 'LockModule option "redis" must be an ioredis Redis/Cluster instance'],
    ['redis', 6379, 'LockModule option "redis" must be'],
    ['redis', null, 'LockModule option "redis" must be'],
    ['redis', new Map(), 'LockModule option "redis" must be'],
    ['keyPrefix', 5, 'LockModule option "keyPrefix" must be a string (got 5)'],
    ['keyPrefix', null, 'LockModule option "keyPrefix" must be a string (got null)'],
    ...milliseconds('watchdogTimeout', 30),
    ...milliseconds('defaultWaitTime', 0),
    ...milliseconds('fairLockWaiterTimeout', 30),
    ...milliseconds('syncReplicasTimeout', 1),
    ...milliseconds('commandTimeout', 1),
    ...milliseconds('shutdownTimeout', 0),
    ['syncReplicas', -1, 'LockModule option "syncReplicas" must be a whole number >= 0 (got -1)'],
    ['syncReplicas', 1.5, 'LockModule option "syncReplicas" must be a whole number >= 0 (got 1.5)'],
    ['syncReplicas', '1', 'LockModule option "syncReplicas" must be a whole number >= 0 (got "1")'],
    ['clientName', '', 'LockModule option "clientName" must be a non-empty string (got "")'],
    ['clientName', '   ', 'LockModule option "clientName" must be a non-empty string'],
    ['clientName', 42, 'LockModule option "clientName" must be a non-empty string (got 42)'],
    ['telemetryLockNames', 'yes', 'LockModule option "telemetryLockNames" must be a boolean (got "yes")'],
    ['isGlobal', 1, 'LockModule option "isGlobal" must be a boolean (got 1)'],
    ['maxNameLength', 0, 'LockModule option "maxNameLength" must be a whole number >= 1 (got 0)'],
    ['maxNameLength', 10.5, 'LockModule option "maxNameLength" must be a whole number >= 1 (got 10.5)'],
    ['maxNameLength', Number.POSITIVE_INFINITY, 'LockModule option "maxNameLength" must be a whole number >= 1 (got Infinity)'],
    ['maxNameLength', '1024', 'LockModule option "maxNameLength" must be a whole number >= 1 (got "1024")'],
  ] as const)('refuses %s = %p with a message naming it', (option, value, message) => {
    expect(() => resolve({ [option]: value })).toThrow(message);
  });

  it('shows a value in the message as the user wrote it (NaN, Infinity, strings quoted)', () => {
    expect(() => resolve({ watchdogTimeout: Number.NaN })).toThrow('(got NaN)');
    expect(() => resolve({ commandTimeout: Number.POSITIVE_INFINITY })).toThrow('(got Infinity)');
    expect(() => resolve({ defaultWaitTime: '5s' })).toThrow('(got "5s")');
  });

  it('refuses an unknown option, naming it and listing the known ones', () => {
    expect(() => resolve({ watchdogTimout: 1000 })).toThrow(
      /^LockModule option "watchdogTimout" is not a known option \(known: redis, keyPrefix, watchdogTimeout, .*isGlobal\)$/,
    );
  });

  describe('redlock', () => {
    it.each([
      ['not an object', 'redis://a:1', 'LockModule option "redlock" must be { clients: [...] } with at least one Redis master'],
      ['no clients', {}, 'LockModule option "redlock" must be { clients: [...] }'],
      ['an empty list', { clients: [] }, 'LockModule option "redlock" must be { clients: [...] }'],
      ['clients not a list', { clients: 'redis://a:1' }, 'LockModule option "redlock" must be { clients: [...] }'],
      ['an unknown key', { clients: ['redis://a:1'], retryCount: 3 }, 'LockModule option "redlock.retryCount" is not a known option (known: clients, masterTimeout)'],
      ['a bad client', { clients: ['redis://a:1', 'a:1'] }, 'LockModule option "redlock.clients[1]" must be an ioredis Redis/Cluster instance'],
      ['a master listed twice', { clients: ['redis://a:1', 'redis://b:1', 'redis://a:1'] }, 'LockModule option "redlock.clients[2]" must be a master not listed before (it repeats redlock.clients[0])'],
      ['masterTimeout 0', { clients: ['redis://a:1'], masterTimeout: 0 }, 'LockModule option "redlock.masterTimeout" must be a whole number of milliseconds >= 1 (got 0)'],
      ['masterTimeout 150.5', { clients: ['redis://a:1'], masterTimeout: 150.5 }, 'LockModule option "redlock.masterTimeout" must be a whole number of milliseconds >= 1 (got 150.5)'],
      ['masterTimeout as text', { clients: ['redis://a:1'], masterTimeout: '100' }, 'LockModule option "redlock.masterTimeout" must be a whole number'],
    ])('refuses %s, naming the option', (_what, redlock, message) => {
      expect(() => resolve({ redlock })).toThrow(message);
    });

    it('refuses a cluster as a master, and the same client instance listed twice', () => {
      expect(() => resolve({ redlock: { clients: [lazyCluster()] } })).toThrow(
        'LockModule option "redlock.clients[0]" must be a standalone Redis master (a Cluster is one system, not an independent master) (got "a Cluster instance")',
      );
      const master = lazyRedis();
      expect(() => resolve({ redlock: { clients: [master, lazyRedis(), master] } })).toThrow('"redlock.clients[2]" must be a master not listed before');
    });

    it('leaves masterTimeout out when not given (its default depends on the lease)', () => {
      expect(resolve({ redlock: { clients: ['redis://a:1'] } }).redlock).toEqual({ clients: ['redis://a:1'] });
    });
  });
});
