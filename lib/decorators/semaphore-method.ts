import { KeyTemplateError } from '../errors';
import { DECORATOR_BAD_KEY, DECORATOR_BAD_OPTION, SEMAPHORE_KEY_SEVERAL } from '../lock.messages';
import type { LockRunContext, RunOptions } from '../locks/lock';
import type { LockBinding, LockNames } from './lock-binding';
import { LockedMethod } from './locked-method';
import type { LockKey } from './distributed-lock.options';

/** Options of `@DistributedSemaphore`. */
export interface DistributedSemaphoreOptions {
  /** The semaphore's limit: at most this many permits held at once, across every process. */
  permits: number;
  /** Permits each call takes (1 to `permits`). Default 1. */
  take?: number;
  /** How long to wait for the permits, in ms (then `LockTimeoutError`, 423 in HTTP). Default: the module's `defaultWaitTime`. */
  waitTime?: number;
  /** Lease in ms: the permits go back by themselves and are never renewed. Omit it to let the watchdog renew. */
  leaseTime?: number;
  /** No permits within `waitTime` (default 0 then): the method does not run and resolves `undefined`. See `RunPolicy`. */
  skipIfLocked?: boolean;
  /** Ms after the acquisition the permits stay taken, even when the method finished sooner. See `RunPolicy`. */
  minHoldTime?: number;
}

const KNOWN_OPTIONS = ['permits', 'take', 'waitTime', 'leaseTime', 'skipIfLocked', 'minHoldTime'];

/** Why `@DistributedSemaphore`'s own options cannot be used, or undefined. */
function semaphoreProblem(method: string, key: LockKey, options: DistributedSemaphoreOptions | undefined): Error | undefined {
  const bad = (option: string, expected: string, value: unknown) =>
    new TypeError(DECORATOR_BAD_OPTION(method, option, expected, value, '@DistributedSemaphore'));
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    return bad('options', 'an object with at least { permits }', options);
  }
  for (const option of Object.keys(options)) {
    if (!KNOWN_OPTIONS.includes(option)) return bad(option, `one of the known options (${KNOWN_OPTIONS.join(', ')})`, option);
  }
  const { permits, take } = options;
  if (typeof permits !== 'number' || !Number.isInteger(permits) || permits < 1) return bad('permits', 'a whole number >= 1', permits);
  if (take !== undefined && (typeof take !== 'number' || !Number.isInteger(take) || take < 1 || take > permits)) {
    return bad('take', `a whole number from 1 to permits (${permits})`, take);
  }
  if (Array.isArray(key)) return new TypeError(DECORATOR_BAD_KEY(method, key, '@DistributedSemaphore'));
  return undefined;
}

/**
 * What `@DistributedSemaphore` knows about one method: the key template, `waitTime` and `leaseTime`
 * are compiled and checked as for `@DistributedLock` (same machinery, same bootstrap validation by
 * the explorer); `permits` and `take` are checked here.
 */
export class SemaphoreMethod extends LockedMethod {
  private readonly permits: number;
  private readonly take: number | undefined;

  constructor(
    method: string,
    key: LockKey,
    options: DistributedSemaphoreOptions,
    original: Function,
    declaredReturnType: unknown,
    earlierProblem?: Error,
  ) {
    const problem = earlierProblem ?? semaphoreProblem(method, key, options);
    const lockOptions: Omit<DistributedSemaphoreOptions, 'permits' | 'take'> = {};
    for (const option of ['waitTime', 'leaseTime', 'skipIfLocked', 'minHoldTime'] as const) {
      if (options?.[option] !== undefined) (lockOptions as Record<string, unknown>)[option] = options[option];
    }
    super(method, key, lockOptions, original, declaredReturnType, problem, '@DistributedSemaphore');
    this.permits = options?.permits;
    this.take = options?.take;
  }

  override run<T>(
    binding: LockBinding,
    names: LockNames,
    body: (context: LockRunContext) => T | Promise<T>,
    options: RunOptions,
  ): Promise<T | undefined> {
    if (typeof names !== 'string') {
      return Promise.reject(new KeyTemplateError(SEMAPHORE_KEY_SEVERAL(this.method)));
    }
    return binding.runSemaphore(names, body, { ...options, permits: this.permits, take: this.take });
  }
}
