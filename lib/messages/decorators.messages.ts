import { show } from './quoting';

/** The decorators and key templates: bootstrap checks of a decorated method, and keys that could not be built. */

/** The method decorator a configuration error names (`@FairLock` and the like are `@DistributedLock`). */
export type DecoratorName = '@DistributedLock' | '@DistributedSemaphore';

const isSemaphore = (decorator: DecoratorName): boolean => decorator === '@DistributedSemaphore';

export const KEY_TEMPLATE_SYNTAX = (template: string, position: number, problem: string): string =>
  `Key template ${show(template)} is invalid at position ${position}: ${problem}`;

/** Said when a method's parameter names look renamed by a minifier (every name one or two characters). */
const MINIFIED_HINT =
  '. These names look minified: a minifier renames parameters, so name them by position instead ' +
  '(#0, #1.field, which survive minification) or a key function, or build without mangling names';

export const KEY_TEMPLATE_UNKNOWN_PARAMETER = (
  method: string,
  template: string,
  name: string,
  known: string,
  looksMinified = false,
  decorator: DecoratorName = '@DistributedLock',
): string =>
  `${decorator} on ${method}: key template ${show(template)} names parameter "${name}", ` +
  `which ${method} does not have (its parameters: ${known})${looksMinified ? MINIFIED_HINT : ''}`;

export const KEY_TEMPLATE_UNKNOWN_POSITION = (
  method: string,
  template: string,
  placeholder: string,
  count: number,
  decorator: DecoratorName = '@DistributedLock',
): string =>
  `${decorator} on ${method}: key template ${show(template)} uses ${placeholder}, ` +
  `but ${method} declares ${count} parameter${count === 1 ? '' : 's'} (positions start at 0)`;

export const KEY_TEMPLATE_NAMES_UNREADABLE = (
  method: string,
  template: string,
  name: string,
  decorator: DecoratorName = '@DistributedLock',
): string =>
  `${decorator} on ${method}: key template ${show(template)} names parameter "${name}", ` +
  `but the parameter names of ${method} cannot be read from its source (a native or bound function, or code ` +
  'rewritten by a minifier or bundler); name parameters by position instead (#0, #1.field, which survive ' +
  'minification) or use a key function';

export const KEY_TEMPLATE_BAD_VALUE = (method: string, template: string, placeholder: string, problem: string): string =>
  `Lock key for ${method} not built: ${placeholder} in ${show(template)} is ${problem}; ` +
  'the method was not run (an empty or shared key would serialise unrelated calls)';

/** Gives the lengths, never the value (it may be huge, and is the caller's input). */
export const KEY_TEMPLATE_TOO_LONG = (method: string, template: string, placeholder: string, length: number, limit: number): string =>
  `Lock key for ${method} not built: ${placeholder} in ${show(template)} makes a key of ${length} characters; ` +
  `the limit is ${limit} (maxNameLength); the method was not run`;

export const KEY_FUNCTION_TOO_LONG = (method: string, index: number | undefined, length: number, limit: number): string =>
  `Lock key for ${method} not built: the key function returned a name${index === undefined ? '' : ` at index ${index}`} ` +
  `of ${length} characters; the limit is ${limit} (maxNameLength); the method was not run`;

export const KEY_FUNCTION_BAD_RESULT = (method: string, problem: string): string =>
  `Lock key for ${method} not built: the key function returned ${problem}; the method was not run`;

export const DECORATOR_BAD_KEY = (method: string, key: unknown, decorator: DecoratorName = '@DistributedLock'): string =>
  isSemaphore(decorator)
    ? `${decorator} on ${method}: the key must be one template string or a function (...args) => string ` +
      `returning one name (got ${show(key)})`
    : `${decorator} on ${method}: the key must be a template string, an array of them, or a function ` +
      `(...args) => string | string[] (got ${show(key)})`;

/** `@DistributedSemaphore`'s key function returned several names. */
export const SEMAPHORE_KEY_SEVERAL = (method: string): string =>
  `@DistributedSemaphore on ${method}: the key function returned several names; a semaphore takes one`;

export const DECORATOR_BAD_OPTION = (
  method: string,
  option: string,
  expected: string,
  value: unknown,
  decorator: DecoratorName = '@DistributedLock',
): string => `${decorator} on ${method}: option "${option}" must be ${expected} (got ${show(value)})`;

export const DECORATOR_MIN_HOLD_OVER_LEASE = (
  method: string,
  minHoldTime: number,
  leaseTime: number,
  decorator: DecoratorName = '@DistributedLock',
): string =>
  `${decorator} on ${method}: option "minHoldTime" (${minHoldTime} ms) must not exceed "leaseTime" ` +
  `(${leaseTime} ms): the lock would expire before its minimum hold ended`;

export const DECORATOR_NOT_A_METHOD = (method: string, decorator: DecoratorName = '@DistributedLock'): string =>
  `${decorator} on ${method}: only methods can be ${isSemaphore(decorator) ? 'decorated' : 'locked'} (not getters, setters or fields)`;

export const DECORATOR_ON_STATIC = (method: string, decorator: DecoratorName = '@DistributedLock'): string =>
  `${decorator} on ${method}: static methods cannot be ${isSemaphore(decorator) ? 'decorated' : 'locked'} ` +
  '(the lock module is found through the instance)';

export const DECORATOR_STACKED = (method: string, decorator: DecoratorName = '@DistributedLock'): string =>
  isSemaphore(decorator)
    ? `${decorator} on ${method}: the method has two lock decorators; a method takes one ` +
      '(either permits of one semaphore or a lock)'
    : `${decorator} on ${method}: the method has two lock decorators; use one with an array of keys ` +
      '(taken together as one multi-lock, in a stable order)';

export const DECORATOR_NOT_ASYNC = (method: string, returnType: string, decorator: DecoratorName = '@DistributedLock'): string =>
  `${decorator} on ${method}: the method is declared to return ${returnType}; a ` +
  `${isSemaphore(decorator) ? 'method taking permits returns a Promise (it waits for the permits)' : 'locked method returns a Promise (it waits for the lock)'}` +
  ', so declare it async / returning a Promise';

export const DECORATOR_NOT_BOUND = (method: string, decorator: DecoratorName = '@DistributedLock'): string =>
  `${method} is decorated with ${decorator} but its instance is not known to any LockModule: ` +
  'import LockModule into the application and let Nest create the instance (the method was not run)';

export const DECORATOR_AMBIGUOUS_BINDING = (method: string, count: number, decorator: DecoratorName = '@DistributedLock'): string =>
  `${method} is decorated with ${decorator} and ${count} LockModule instances could serve it; ` +
  'import exactly one LockModule into the module that provides it';

export const DECORATOR_ALREADY_BOUND = (method: string, decorator: DecoratorName = '@DistributedLock'): string =>
  `${method} is decorated with ${decorator} and its instance is already served by the LockModule ` +
  'of another application; an instance can belong to one application at a time';

export const LOCK_CONTEXT_ON_CONSTRUCTOR = (className: string): string =>
  `@LockContext() marks a method parameter; it was put on a constructor parameter of ${className}`;

export const DECORATOR_SKIP_ON_ANSWERING_HANDLER = (method: string, handler: string, decorator: DecoratorName = '@DistributedLock'): string =>
  `${decorator} on ${method}: skipIfLocked on ${handler} is refused. When the ` +
  `${isSemaphore(decorator) ? 'permits are taken' : 'lock is busy'} the method would not run and its caller would get a ` +
  'success with an empty answer (201 and no body on a POST), so a second submission would look accepted. ' +
  `Drop skipIfLocked and give { waitTime: 0 }: a busy ${isSemaphore(decorator) ? 'semaphore' : 'lock'} then answers ` +
  'what a busy lock answers (LockTimeoutError: 423 Locked over HTTP, the same body over RPC and GraphQL) at once; ' +
  'see docs/double-submission.md. skipIfLocked is for work no caller waits for: @Cron jobs, queue consumers, ' +
  '@EventPattern handlers';

/** Appended to KEY_TEMPLATE_UNKNOWN_PARAMETER when a parameter's name is close to the one the template names. */
export const KEY_TEMPLATE_DID_YOU_MEAN = (name: string): string => `. Did you mean #${name}?`;
