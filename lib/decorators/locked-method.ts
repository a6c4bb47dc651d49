import { KeyTemplateError } from '../errors';
import {
  DECORATOR_BAD_KEY,
  DECORATOR_BAD_OPTION,
  DECORATOR_MIN_HOLD_OVER_LEASE,
  DECORATOR_NOT_ASYNC,
  type DecoratorName,
  KEY_FUNCTION_BAD_RESULT,
  KEY_FUNCTION_TOO_LONG,
  quoteName,
} from '../lock.messages';
import type { LockRunContext, RunOptions } from '../locks/lock';
import type { LockBinding, LockNames } from './lock-binding';
import { DistributedLockOptions, LOCK_MODES, LockKey, LockMode } from './distributed-lock.options';
import { compileKeyTemplate, KeyBuilder } from './key-template';
import { declaredParameters } from './parameter-names';

const KNOWN_OPTIONS = ['mode', 'waitTime', 'leaseTime', 'skipIfLocked', 'minHoldTime'];

/**
 * What `@DistributedLock` knows about one method, worked out once at decoration time: the compiled
 * key, the mode and the run options. A problem found then (unknown parameter, bad option) is kept in
 * `problem` and thrown by the explorer at bootstrap, where the whole application fails to start.
 */
export class LockedMethod {
  readonly mode: LockMode;
  readonly runOptions: RunOptions;
  /** Why this method cannot be locked; thrown at bootstrap. */
  readonly problem: Error | undefined;
  /** The key template(s) as written; undefined for a key function (checked per layout at bootstrap). */
  readonly templates: readonly string[] | undefined;
  private readonly keys: (thisArg: unknown, args: readonly unknown[], maxNameLength: number) => LockNames;

  constructor(
    /** `Class.method`, for messages. */
    readonly method: string,
    key: LockKey,
    options: DistributedLockOptions | undefined,
    original: Function,
    declaredReturnType: unknown,
    /** A problem the decorator found before (two lock decorators on one method). */
    earlierProblem?: Error,
    /** The decorator this method was declared with, as configuration errors name it. */
    readonly decorator: DecoratorName = '@DistributedLock',
  ) {
    let mode: LockMode = 'reentrant';
    let runOptions: RunOptions = {};
    let keys: LockedMethod['keys'] = () => {
      throw this.problem;
    };
    let problem: Error | undefined;
    try {
      if (earlierProblem) throw earlierProblem;
      ({ mode, runOptions } = checkOptions(method, options, decorator));
      checkReturnType(method, declaredReturnType, decorator);
      keys = compileKey(method, key, original, decorator);
    } catch (error) {
      problem = error as Error;
    }
    this.mode = mode;
    // Metrics and spans name the lock by its template, never by the concrete key.
    this.runOptions = { ...runOptions, metricName: metricNameOf(method, key) };
    this.keys = keys;
    this.problem = problem;
    this.templates = typeof key === 'string' ? [key] : Array.isArray(key) && key.every((t) => typeof t === 'string') ? (key as string[]) : undefined;
  }

  /** Runs `body` under this method's lock (`@DistributedSemaphore` takes permits instead). */
  run<T>(binding: LockBinding, names: LockNames, body: (context: LockRunContext) => T | Promise<T>, options: RunOptions): Promise<T | undefined> {
    return binding.run(this.mode, names, body, options);
  }

  /**
   * The lock names of one call; throws `KeyTemplateError` for a value that cannot make a key (a name
   * longer than `maxNameLength` among them: a bad request, not a lock name).
   */
  namesFor(thisArg: unknown, args: readonly unknown[], maxNameLength: number): LockNames {
    return this.keys(thisArg, args, maxNameLength);
  }
}

function checkOptions(
  method: string,
  options: DistributedLockOptions | undefined,
  decorator: DecoratorName,
): { mode: LockMode; runOptions: RunOptions } {
  if (options === undefined) return { mode: 'reentrant', runOptions: {} };
  const bad = (option: string, expected: string, value: unknown) => new TypeError(DECORATOR_BAD_OPTION(method, option, expected, value, decorator));
  if (typeof options !== 'object' || options === null || Array.isArray(options)) throw bad('options', 'an object', options);
  for (const option of Object.keys(options)) {
    if (!KNOWN_OPTIONS.includes(option)) throw bad(option, `one of the known options (${KNOWN_OPTIONS.join(', ')})`, option);
  }
  const { mode = 'reentrant' } = options;
  if (!LOCK_MODES.includes(mode)) throw bad('mode', LOCK_MODES.map((m) => `'${m}'`).join(' | '), mode);
  return { mode, runOptions: checkRunOptions(method, options, decorator) };
}

/**
 * The run options every lock decorator shares (`waitTime`, `leaseTime`, `skipIfLocked`,
 * `minHoldTime`), checked at bootstrap; each error names the method and the option.
 */
export function checkRunOptions(method: string, options: RunOptions, decorator: DecoratorName): RunOptions {
  const bad = (option: string, expected: string, value: unknown) => new TypeError(DECORATOR_BAD_OPTION(method, option, expected, value, decorator));
  const { waitTime, leaseTime, skipIfLocked, minHoldTime } = options;
  // Whole milliseconds, refused at bootstrap otherwise: an option is written once, and a fraction is
  // a slip to hear about now (a per-call time is rounded up instead: validators.ts, wholeMs).
  const whole = (value: number) => Number.isInteger(value);
  if (waitTime !== undefined && (typeof waitTime !== 'number' || !(whole(waitTime) || waitTime === Number.POSITIVE_INFINITY) || waitTime < 0)) {
    throw bad('waitTime', 'a whole number of milliseconds >= 0, or Infinity', waitTime);
  }
  if (leaseTime !== undefined && (typeof leaseTime !== 'number' || !whole(leaseTime) || leaseTime <= 0)) {
    throw bad('leaseTime', 'a whole number of milliseconds > 0', leaseTime);
  }
  if (skipIfLocked !== undefined && typeof skipIfLocked !== 'boolean') throw bad('skipIfLocked', 'a boolean', skipIfLocked);
  if (minHoldTime !== undefined && (typeof minHoldTime !== 'number' || !whole(minHoldTime) || minHoldTime < 0)) {
    throw bad('minHoldTime', 'a whole number of milliseconds >= 0', minHoldTime);
  }
  if (minHoldTime !== undefined && leaseTime !== undefined && minHoldTime > leaseTime) {
    throw new RangeError(DECORATOR_MIN_HOLD_OVER_LEASE(method, minHoldTime, leaseTime, decorator));
  }
  const runOptions: RunOptions = {};
  if (waitTime !== undefined) runOptions.waitTime = waitTime;
  if (leaseTime !== undefined) runOptions.leaseTime = leaseTime;
  if (skipIfLocked) runOptions.skipIfLocked = true;
  if (minHoldTime) runOptions.minHoldTime = minHoldTime;
  return runOptions;
}

/**
 * A locked method returns a Promise whatever its body does (it waits for the lock). A method declared
 * to return something else (`string`, an `Observable`, whose work would run after the lock is gone)
 * is refused. `Object` (any, unions) and no metadata at all are accepted.
 */
/** `lock.key_template`: the template(s) as written; a key function is named by its method. */
function metricNameOf(method: string, key: LockKey): string {
  if (typeof key === 'string') return key;
  if (Array.isArray(key) && key.every((template) => typeof template === 'string')) return key.join(',');
  return method;
}

function checkReturnType(method: string, declared: unknown, decorator: DecoratorName): void {
  if (typeof declared !== 'function' || declared === Promise || declared === Object) return;
  throw new TypeError(DECORATOR_NOT_ASYNC(method, declared.name || 'a non-Promise value', decorator));
}

function compileKey(method: string, key: LockKey, original: Function, decorator: DecoratorName): LockedMethod['keys'] {
  if (typeof key === 'function') {
    return (thisArg, args, maxNameLength) => checkKeyFunctionResult(method, key.apply(thisArg, args as unknown[]), maxNameLength);
  }
  const templates = typeof key === 'string' ? [key] : Array.isArray(key) ? key : undefined;
  if (!templates || templates.length === 0 || templates.some((template) => typeof template !== 'string')) {
    throw new TypeError(DECORATOR_BAD_KEY(method, key, decorator));
  }
  const parameters = declaredParameters(original);
  const builders: KeyBuilder[] = templates.map((template) => compileKeyTemplate(template, parameters, method, decorator));
  if (typeof key === 'string') return (_thisArg, args, maxNameLength) => builders[0](args, maxNameLength);
  return (_thisArg, args, maxNameLength) => builders.map((build) => build(args, maxNameLength));
}

function checkKeyFunctionResult(method: string, result: unknown, maxNameLength: number): LockNames {
  if (typeof result === 'string') {
    if (result === '') throw new KeyTemplateError(KEY_FUNCTION_BAD_RESULT(method, 'an empty string'));
    if (result.length > maxNameLength) throw new KeyTemplateError(KEY_FUNCTION_TOO_LONG(method, undefined, result.length, maxNameLength));
    return result;
  }
  if (!Array.isArray(result)) throw new KeyTemplateError(KEY_FUNCTION_BAD_RESULT(method, describe(result)));
  if (result.length === 0) throw new KeyTemplateError(KEY_FUNCTION_BAD_RESULT(method, 'an empty array'));
  const bad = result.findIndex((name) => typeof name !== 'string' || name === '');
  if (bad !== -1) throw new KeyTemplateError(KEY_FUNCTION_BAD_RESULT(method, `${describe(result[bad])} at index ${bad}`));
  const long = result.findIndex((name) => (name as string).length > maxNameLength);
  if (long !== -1) throw new KeyTemplateError(KEY_FUNCTION_TOO_LONG(method, long, (result[long] as string).length, maxNameLength));
  if (result.length === 1) return result[0] as string;
  return result as string[];
}

function describe(value: unknown): string {
  if (value === '') return 'an empty string';
  if (value === null || value === undefined) return String(value);
  return typeof value === 'object' ? 'an object' : typeof value === 'string' ? `string ${quoteName(value)}` : `${typeof value} ${String(value)}`;
}
