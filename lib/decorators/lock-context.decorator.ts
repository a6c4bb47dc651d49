import 'reflect-metadata';
import { createParamDecorator } from '@nestjs/common';
import { LOCK_CONTEXT_ON_CONSTRUCTOR } from '../lock.messages';

/** Reflect metadata key (on the prototype, per method) of the parameter `@LockContext()` marks. */
export const LOCK_CONTEXT_PARAMETER = Symbol('nestjs-redis-locks:lock-context');

/**
 * Nest's own route-parameter metadata for that parameter, so the router counts it among the
 * handler's arguments (its value is `undefined` here; the lock wrapper puts the context in).
 */
const RouteParameter = createParamDecorator(() => undefined);

/** The index of the parameter `@LockContext()` marks on `target[propertyKey]`, if any. */
export function lockContextParameter(target: object, propertyKey: string | symbol): number | undefined {
  return Reflect.getOwnMetadata(LOCK_CONTEXT_PARAMETER, target, propertyKey) as number | undefined;
}

/**
 * Passes the lock context of the method's own lock decorator (`@DistributedLock`, `@FairLock`,
 * `@ReadLock`, `@WriteLock`) as this argument: `{ name, signal, fencingToken }`, the same object
 * as the services' `current()` inside the method. Works on providers and on controllers, next to
 * Nest's route parameter decorators. On a method without a lock decorator the argument is
 * `undefined`.
 *
 * ```ts
 * @Post(':id/pay')
 * @DistributedLock('order:#id')
 * pay(@Param('id') id: string, @LockContext() lock: LockRunContext) { ... lock.fencingToken ... }
 * ```
 */
export function LockContext(): ParameterDecorator {
  return (target: object, propertyKey: string | symbol | undefined, index: number) => {
    if (propertyKey === undefined) throw new TypeError(LOCK_CONTEXT_ON_CONSTRUCTOR((target as Function).name));
    Reflect.defineMetadata(LOCK_CONTEXT_PARAMETER, index, target, propertyKey);
    RouteParameter()(target, propertyKey, index);
  };
}
