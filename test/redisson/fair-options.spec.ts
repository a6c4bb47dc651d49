import { resolveLockOptions } from '../../lib/lock.options';

/** `fairLockWaiterTimeout` is Java's `fairLockWaitTimeout` in the Redisson layout, with Java's default. */
describe('fairLockWaiterTimeout in layout redisson', () => {
  it('defaults to 300 000 ms (Redisson\'s fairLockWaitTimeout) in layout redisson, 5 000 ms in native', () => {
    expect(resolveLockOptions({ layout: 'redisson' }).fairLockWaiterTimeout).toBe(300_000);
    expect(resolveLockOptions({}).fairLockWaiterTimeout).toBe(5_000);
    expect(resolveLockOptions({ layout: 'native' }).fairLockWaiterTimeout).toBe(5_000);
  });

  it('an explicit value is kept in either layout, and checked', () => {
    expect(resolveLockOptions({ layout: 'redisson', fairLockWaiterTimeout: 60_000 }).fairLockWaiterTimeout).toBe(60_000);
    expect(resolveLockOptions({ fairLockWaiterTimeout: 60_000 }).fairLockWaiterTimeout).toBe(60_000);
    expect(() => resolveLockOptions({ layout: 'redisson', fairLockWaiterTimeout: -1 })).toThrow(/fairLockWaiterTimeout/);
  });
});
