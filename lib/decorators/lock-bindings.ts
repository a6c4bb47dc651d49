import { DECORATOR_ALREADY_BOUND, DECORATOR_AMBIGUOUS_BINDING, DECORATOR_NOT_BOUND, type DecoratorName } from '../lock.messages';
import type { LockBinding } from './lock-binding';

/**
 * Which LockModule serves which instance, recorded by each application's explorer at bootstrap and
 * read by the decorated methods at call time. Keyed weakly by instance, so several applications in
 * one process (tests) each serve their own instances and nothing outlives them. Instances Nest
 * creates per request or per consumer (request-scoped, transient) are recorded as Nest creates them.
 */
const byInstance = new WeakMap<object, LockBinding>();
const byClass = new WeakMap<Function, Set<LockBinding>>();

export function bindInstance(instance: object, binding: LockBinding, method: string, decorator?: DecoratorName): void {
  const existing = byInstance.get(instance);
  if (existing && existing !== binding && !existing.closed) throw new Error(DECORATOR_ALREADY_BOUND(method, decorator));
  byInstance.set(instance, binding);
}

/** An instance Nest created for one request or consumer: it lives and dies with it. */
export function bindScopedInstance(instance: object, binding: LockBinding): void {
  byInstance.set(instance, binding);
}

/** Fallback for scoped providers when their instances cannot be watched: one binding per class. */
export function bindClass(type: Function, binding: LockBinding): void {
  const bindings = byClass.get(type) ?? new Set<LockBinding>();
  bindings.add(binding);
  byClass.set(type, bindings);
}

/**
 * Its application is closing: instances keep the closed binding (a late call fails as a shutdown, and
 * another application may take the instance over), classes forget it.
 */
export function unbind(binding: LockBinding, types: Iterable<Function>): void {
  binding.closed = true;
  for (const type of types) byClass.get(type)?.delete(binding);
}

/** The binding serving `instance`; throws (the method must not run unlocked) when there is none. */
export function bindingOf(instance: unknown, method: string, decorator?: DecoratorName): LockBinding {
  if (typeof instance === 'object' && instance !== null) {
    const bound = byInstance.get(instance);
    if (bound) return bound;
    const byType = byClass.get(instance.constructor);
    if (byType?.size === 1) return byType.values().next().value!;
    if (byType && byType.size > 1) throw new Error(DECORATOR_AMBIGUOUS_BINDING(method, byType.size, decorator));
  }
  throw new Error(DECORATOR_NOT_BOUND(method, decorator));
}
