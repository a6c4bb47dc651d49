import type { InstanceWrapper } from '@nestjs/core/injector/instance-wrapper';

type Holder = { instance?: unknown };
type SetterName = 'setInstanceByContextId' | 'setInstanceByInquirerId';

/** Where each setter of `InstanceWrapper` takes the per-context holder. */
const HOLDER_ARGUMENT: Record<SetterName, number> = { setInstanceByContextId: 1, setInstanceByInquirerId: 2 };

const watchedHolders = new WeakSet<object>();

/**
 * Calls `onInstance` with every instance Nest creates for a request-scoped or transient provider
 * (one per request / consumer), by watching the per-context holders this application's wrapper
 * stores. The wrapper object belongs to one application, so another application using the same
 * class is not affected. Returns false when this Nest version stores instances differently.
 */
export function watchScopedInstances(wrapper: InstanceWrapper, onInstance: (instance: object) => void): boolean {
  const target = wrapper as unknown as Record<SetterName, ((...args: unknown[]) => unknown) | undefined>;
  const setters = Object.keys(HOLDER_ARGUMENT) as SetterName[];
  if (setters.some((name) => typeof target[name] !== 'function')) return false;
  for (const name of setters) {
    const original = target[name]!;
    target[name] = function (this: unknown, ...args: unknown[]) {
      watchHolder(args[HOLDER_ARGUMENT[name]], onInstance);
      return original.apply(this, args);
    };
  }
  return true;
}

/** Turns the holder's `instance` into an accessor that reports each object stored in it. */
function watchHolder(holder: unknown, onInstance: (instance: object) => void): void {
  if (typeof holder !== 'object' || holder === null || watchedHolders.has(holder)) return;
  watchedHolders.add(holder);
  let current = (holder as Holder).instance;
  if (typeof current === 'object' && current !== null) onInstance(current);
  Object.defineProperty(holder, 'instance', {
    configurable: true,
    enumerable: true,
    get: () => current,
    set: (value: unknown) => {
      current = value;
      if (typeof value === 'object' && value !== null) onInstance(value);
    },
  });
}
