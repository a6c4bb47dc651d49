import 'reflect-metadata';
import { DECORATOR_NOT_A_METHOD, DECORATOR_ON_STATIC, DECORATOR_STACKED } from '../lock.messages';
import type { DistributedLockOptions, LockedMethodDecorator, LockKey, ModeLockOptions } from './distributed-lock.options';
import { bindingOf } from './lock-bindings';
import { LockedMethod } from './locked-method';
import { lockContextParameter } from './lock-context.decorator';
import { requestSignal } from '../runtime/request-signal';

/** Reflect metadata key under which a locked method's wrapper carries its `LockedMethod`. */
export const LOCKED_METHOD = Symbol('nestjs-redis-locks:locked-method');

/** The `LockedMethod` of a decorated method (its wrapper), or undefined. */
export function lockedMethodOf(method: unknown): LockedMethod | undefined {
  return typeof method === 'function' ? Reflect.getOwnMetadata(LOCKED_METHOD, method) : undefined;
}

/**
 * Runs the method under a distributed lock named by `key` (a template such as `'order:#id'`, several
 * templates, or a function of the arguments). Works on controller and provider methods alike, with
 * no interceptor to register: the method is wrapped here, once, and finds its application's
 * LockModule at call time. Nested calls on the same key re-enter; a lock not acquired within
 * `waitTime` throws `LockTimeoutError` (423 Locked in an HTTP request) and the method does not run.
 * Problems with the key or options fail the application's bootstrap.
 */
export function DistributedLock(key: LockKey, options?: DistributedLockOptions): LockedMethodDecorator {
  return <T extends (...args: any[]) => Promise<unknown>>(target: object, propertyKey: string | symbol, descriptor: TypedPropertyDescriptor<T>) => {
    const method = `${typeof target === 'function' ? target.name : target.constructor.name}.${String(propertyKey)}`;
    if (typeof target === 'function') throw new TypeError(DECORATOR_ON_STATIC(method));
    const original: unknown = descriptor.value;
    if (typeof original !== 'function') throw new TypeError(DECORATOR_NOT_A_METHOD(method));
    const returnType: unknown = Reflect.getMetadata('design:returntype', target, propertyKey);
    const stacked = lockedMethodOf(original) ? new TypeError(DECORATOR_STACKED(method)) : undefined;
    const locked = new LockedMethod(method, key, options, original, returnType, stacked);
    descriptor.value = lockedWrapper(original, locked, lockContextParameter(target, propertyKey)) as T;
  };
}

/** `@DistributedLock(key, { ...options, mode: 'fair' })`: waiters get the lock in the order they asked. */
export function FairLock(key: LockKey, options?: ModeLockOptions): LockedMethodDecorator {
  return DistributedLock(key, { ...options, mode: 'fair' });
}

/** `@DistributedLock(key, { ...options, mode: 'read' })`: shared with other readers, excluded by a writer. */
export function ReadLock(key: LockKey, options?: ModeLockOptions): LockedMethodDecorator {
  return DistributedLock(key, { ...options, mode: 'read' });
}

/** `@DistributedLock(key, { ...options, mode: 'write' })`: excludes readers and other writers. */
export function WriteLock(key: LockKey, options?: ModeLockOptions): LockedMethodDecorator {
  return DistributedLock(key, { ...options, mode: 'write' });
}

/**
 * A Proxy over the method: same `name`, `length` and source, and every Reflect metadata key the
 * decorators below this one defined (guards, pipes, route, Swagger...) copied onto it; decorators
 * above this one write onto the wrapper itself. Calling it resolves the LockModule serving `this`,
 * builds the key (a bad value throws before anything is locked) and runs the method under the lock.
 */
export function lockedWrapper(original: Function, locked: LockedMethod, contextIndex: number | undefined): Function {
  const wrapper = new Proxy(original, {
    apply: (target, thisArg: unknown, args: unknown[]) => callLocked(locked, target, thisArg, args, contextIndex),
  });
  for (const key of Reflect.getOwnMetadataKeys(original)) {
    Reflect.defineMetadata(key, Reflect.getOwnMetadata(key, original), wrapper);
  }
  Reflect.defineMetadata(LOCKED_METHOD, locked, wrapper);
  return wrapper;
}

/**
 * In an HTTP request the wait ends when the client disconnects (`LockRequestInterceptor`'s
 * signal); the `@LockContext()` parameter, if any, receives the lock context.
 */
function callLocked(
  locked: LockedMethod,
  original: Function,
  thisArg: unknown,
  args: unknown[],
  contextIndex: number | undefined,
): Promise<unknown> {
  // Not an async function: the run's own promise is returned as is (no extra promise to adopt it
  // per call); a missing binding or a bad key value still rejects, never throws.
  try {
    const binding = bindingOf(thisArg, locked.method, locked.decorator);
    const names = locked.namesFor(thisArg, args, binding.maxNameLength);
    const signal = requestSignal();
    const options = signal ? { ...locked.runOptions, signal } : locked.runOptions;
    if (contextIndex === undefined) return locked.run(binding, names, () => Reflect.apply(original, thisArg, args), options);
    return locked.run(
      binding,
      names,
      (context) => {
        const withContext = [...args];
        withContext[contextIndex] = context;
        return Reflect.apply(original, thisArg, withContext);
      },
      options,
    );
  } catch (error) {
    return Promise.reject(error);
  }
}
