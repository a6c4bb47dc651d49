import { INVALID_LOCK_NAME, LOCK_NAME_TOO_LONG } from '../lock.messages';
import { LockError, type BadLockNameExtensions } from './lock-error';

/** A lock name, key template or name pattern that cannot be used: a bad request (400) on every transport. */

/**
 * A key template that cannot be used: unknown parameter at bootstrap, or an unusable value at call
 * time (missing, `null`, an object, too long). At call time the value is the caller's input, so
 * `statusCode` 400 and `extensions.code` `BAD_REQUEST` give it the meaning of a bad request on every
 * transport; `parameter` names the placeholder (`#id`) when one was at fault.
 */
export class KeyTemplateError extends LockError {
  /** 400 Bad Request, the HTTP status Nest answers with for this error. */
  readonly statusCode = 400;
  /** What GraphQL clients receive: the code `BAD_REQUEST`, the status and the placeholder at fault. */
  readonly extensions: BadLockNameExtensions;
  constructor(
    message: string,
    /** The key template placeholder at fault (`#id`), when one was. */
    readonly parameter?: string,
  ) {
    super(message);
    this.extensions = parameter === undefined ? { code: 'BAD_REQUEST', statusCode: 400 } : { code: 'BAD_REQUEST', statusCode: 400, parameter };
  }
}

/**
 * A lock name longer than the module's `maxNameLength`. The message gives the limit and the length,
 * not the name. A bad request (400) on every transport, like an unusable key template value.
 */
export class LockNameTooLongError extends LockError {
  /** 400 Bad Request, the HTTP status Nest answers with for this error. */
  readonly statusCode = 400;
  /** What GraphQL clients receive: the code `BAD_REQUEST` and the status. */
  readonly extensions: BadLockNameExtensions = { code: 'BAD_REQUEST', statusCode: 400 };
  constructor(
    /** The length of the refused name. */
    readonly nameLength: number,
    /** The module's `maxNameLength`. */
    readonly maxNameLength: number,
  ) {
    super(LOCK_NAME_TOO_LONG(nameLength, maxNameLength));
  }
}

/**
 * A lock name that is not a non-empty string (`getLock('')`, `run('')`, `inspect('')`, a multi-lock
 * member, ...). A bad request (400) on every transport, like `LockNameTooLongError`. It extends
 * `TypeError`, not `LockError`: an empty name was refused with a plain `TypeError` before, and code
 * catching `TypeError` keeps working (a class cannot extend both).
 */
export class InvalidLockNameError extends TypeError {
  /** 400 Bad Request, the HTTP status Nest answers with for this error. */
  readonly statusCode = 400;
  /** What GraphQL clients receive: the code `BAD_REQUEST` and the status. */
  readonly extensions: BadLockNameExtensions = { code: 'BAD_REQUEST', statusCode: 400 };
  constructor(
    value: unknown,
    /** Why a non-empty name is refused (a layout's rule); by default: not a non-empty string. */
    message?: string,
  ) {
    super(message ?? INVALID_LOCK_NAME(value));
    this.name = 'InvalidLockNameError';
  }
}

/**
 * A `list({ match })` pattern refused before Redis is asked: invalid (`[z-a]`, an unclosed `[`) or too
 * costly (too many wildcards, too long); the message says why. A bad request (400) on every transport
 * (`match` is a request value in admin endpoints). It extends `TypeError`, as the refusal was documented
 * to be (`error instanceof TypeError` keeps working), not `LockError`.
 */
export class LockNamePatternError extends TypeError {
  /** 400 Bad Request, the HTTP status Nest answers with for this error. */
  readonly statusCode = 400;
  /** What GraphQL clients receive: the code `BAD_REQUEST` and the status. */
  readonly extensions: BadLockNameExtensions = { code: 'BAD_REQUEST', statusCode: 400 };
  constructor(message: string) {
    super(message);
    this.name = 'LockNamePatternError';
  }
}
