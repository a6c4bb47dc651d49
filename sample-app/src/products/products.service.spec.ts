import { Test, TestingModule } from '@nestjs/testing';
import { LockTimeoutError, LockUnavailableError } from '../../../lib';
import { LockTestingControls, LockTestingModule } from '../../../lib/testing';
import { APP_REDIS } from '../redis/app-redis.provider';
import { ProductsService } from './products.service';

/** The app's stock as a map (the data store is not what these tests are about; the locks are). */
function stockStore() {
  const values = new Map<string, string>();
  return { get: async (key: string) => values.get(key) ?? null, set: async (key: string, value: unknown) => values.set(key, String(value)) && 'OK' };
}

describe('ProductsService (testing kit)', () => {
  let moduleRef: TestingModule;
  let products: ProductsService;
  let controls: LockTestingControls;

  beforeEach(async () => {
    moduleRef = await Test.createTestingModule({
      imports: [LockTestingModule.forRoot()],
      providers: [ProductsService, { provide: APP_REDIS, useValue: stockStore() }],
    }).compile();
    await moduleRef.init();
    products = moduleRef.get(ProductsService);
    controls = moduleRef.get(LockTestingControls);
  });
  afterEach(() => moduleRef.close());

  it('@DistributedLock(stock:#sku): concurrent reservations take turns and never oversell', async () => {
    await products.setStock('A', 5);
    const outcomes = await Promise.all(Array.from({ length: 12 }, () => products.reserve('A', 1)));
    expect(outcomes.filter((outcome) => outcome.reserved)).toHaveLength(5);
    expect((await products.getStock('A')).stock).toBe(0);
    // Without the lock the same reservations oversell: the test would catch a lost decorator.
    await products.setStock('B', 5);
    const unlocked = await Promise.all(Array.from({ length: 12 }, () => products.reserveUnlocked('B', 1)));
    expect(unlocked.filter((outcome) => outcome.reserved).length).toBeGreaterThan(5);
  });

  it('gives up after its 15 s waitTime while another instance holds the product (423)', async () => {
    jest.useFakeTimers();
    try {
      await products.setStock('C', 5);
      await controls.holdElsewhere('stock:C');
      const outcome = products.reserve('C', 1).catch((error: unknown) => error);
      await jest.advanceTimersByTimeAsync(15_000);
      expect(await outcome).toBeInstanceOf(LockTimeoutError);
      expect((await products.getStock('C')).stock).toBe(5);
    } finally {
      jest.useRealTimers();
    }
  });

  it('fails with LockUnavailableError (503) while Redis is down, without touching the stock', async () => {
    await products.setStock('D', 5);
    controls.setUnavailable(true);
    jest.useFakeTimers();
    try {
      const outcome = products.reserve('D', 1).catch((error: unknown) => error);
      await jest.advanceTimersByTimeAsync(15_000);
      expect(await outcome).toBeInstanceOf(LockUnavailableError);
    } finally {
      jest.useRealTimers();
    }
    expect((await products.getStock('D')).stock).toBe(5);
  });
});
