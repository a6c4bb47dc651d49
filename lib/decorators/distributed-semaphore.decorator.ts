import 'reflect-metadata';
import { DECORATOR_NOT_A_METHOD, DECORATOR_ON_STATIC, DECORATOR_STACKED } from '../lock.messages';
import { lockedMethodOf, lockedWrapper } from './distributed-lock.decorator';
import type { LockedMethodDecorator, LockKey } from './distributed-lock.options';
import { lockContextParameter } from './lock-context.decorator';
import { DistributedSemaphoreOptions, SemaphoreMethod } from './semaphore-method';

/**
 * Runs the method holding `take` permits (default 1) of the semaphore named by `key` (a key template
 * such as `'export:#tenantId'`, or a function of the arguments returning one name), of which at
 * most `permits` are held at once across every process. Like `@DistributedLock`: works on
 * controllers and plain providers, keeps the method's other decorators, `@LockContext()` receives
 * `{ name, signal, fencingToken }`, a call that gets no permits within `waitTime` throws
 * `LockTimeoutError` (423 in HTTP) without running, and a bad key or option fails the bootstrap.
 * Not reentrant: a nested call on the same key takes more permits.
 */
export function DistributedSemaphore(key: LockKey, options: DistributedSemaphoreOptions): LockedMethodDecorator {
  return <T extends (...args: any[]) => Promise<unknown>>(target: object, propertyKey: string | symbol, descriptor: TypedPropertyDescriptor<T>) => {
    const method = `${typeof target === 'function' ? target.name : target.constructor.name}.${String(propertyKey)}`;
    if (typeof target === 'function') throw new TypeError(DECORATOR_ON_STATIC(method, '@DistributedSemaphore'));
    const original: unknown = descriptor.value;
    if (typeof original !== 'function') throw new TypeError(DECORATOR_NOT_A_METHOD(method, '@DistributedSemaphore'));
    const returnType: unknown = Reflect.getMetadata('design:returntype', target, propertyKey);
    const stacked = lockedMethodOf(original) ? new TypeError(DECORATOR_STACKED(method, '@DistributedSemaphore')) : undefined;
    const semaphore = new SemaphoreMethod(method, key, options, original, returnType, stacked);
    descriptor.value = lockedWrapper(original, semaphore, lockContextParameter(target, propertyKey)) as T;
  };
}
