import { Test, TestingModule } from '@nestjs/testing';
import { LockLostError } from '../../../lib';
import { LockTestingControls, LockTestingModule } from '../../../lib/testing';
import { FencedStore } from '../fencing/fenced-store';
import { APP_REDIS } from '../redis/app-redis.provider';
import { OrdersService } from './orders.service';

/** Unit tests: the locks come from the testing kit (no Redis), the app's data store is a stub. */
describe('OrdersService (testing kit)', () => {
  let moduleRef: TestingModule;
  let orders: OrdersService;
  let controls: LockTestingControls;
  const store = { write: jest.fn(async () => true) };

  beforeEach(async () => {
    jest.useFakeTimers();
    store.write.mockClear();
    moduleRef = await Test.createTestingModule({
      // A short watchdog round (every 10 ms), so a lost lock is noticed during the 20 ms provider call.
      imports: [LockTestingModule.forRoot({ watchdogTimeout: 30 })],
      providers: [OrdersService, { provide: FencedStore, useValue: store }, { provide: APP_REDIS, useValue: { hgetall: async () => ({}) } }],
    }).compile();
    await moduleRef.init();
    orders = moduleRef.get(OrdersService);
    controls = moduleRef.get(LockTestingControls);
  });
  afterEach(async () => {
    await moduleRef.close();
    jest.useRealTimers();
  });

  it('records a payment with the fencing token of its lock', async () => {
    const paying = orders.pay('o-1', 30);
    await jest.advanceTimersByTimeAsync(20); // the payment provider's call
    await expect(paying).resolves.toMatchObject({ orderId: 'o-1', status: 'paid', amount: 30 });
    const [acquisition] = controls.acquisitions;
    expect(acquisition).toMatchObject({ name: 'order:o-1', kind: 'reentrant', outcome: 'acquired' });
    expect(store.write).toHaveBeenCalledWith('sample:order:o-1', expect.objectContaining({ amount: 30 }), acquisition.fencingToken);
  });

  it('does not record a payment whose lock was lost during the provider call', async () => {
    const paying = orders.pay('o-2', 30);
    paying.catch(() => undefined);
    await jest.advanceTimersByTimeAsync(1); // acquired, now waiting for the provider
    await controls.loseLock('order:o-2');
    // Noticed when production would: at the watchdog's next round (every watchdogTimeout / 3).
    await jest.advanceTimersByTimeAsync(20);
    await expect(paying).rejects.toBeInstanceOf(LockLostError);
    expect(store.write).not.toHaveBeenCalled();
  });
});
