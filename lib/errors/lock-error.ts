import { shortName } from '../lock.messages';

/** The base class of the library's errors, and what their GraphQL extensions carry. */

/** Base class of every error the library throws on purpose. */
export class LockError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/**
 * What a GraphQL server answers for a lock error: graphql-js copies an error's own `extensions`
 * into the GraphQL error it makes of it, and Apollo and Mercurius keep a `code` found there instead
 * of INTERNAL_SERVER_ERROR.
 */
export interface LockErrorExtensions {
  /** The GraphQL error code: `LOCKED` (423), `SERVICE_UNAVAILABLE` (503) or `CONFLICT` (409, a deadlock). */
  readonly code: 'LOCKED' | 'SERVICE_UNAVAILABLE' | 'CONFLICT';
  /** The HTTP status the same error answers with. */
  readonly statusCode: 409 | 423 | 503;
  /** The name(s), each cut to its first 200 characters (a name may be a request value). */
  readonly lockName: string | readonly string[];
}

/** What a GraphQL server answers for a lock name or key template value it cannot use (400). */
export interface BadLockNameExtensions {
  /** The GraphQL error code of a bad request. */
  readonly code: 'BAD_REQUEST';
  /** The HTTP status the same error answers with. */
  readonly statusCode: 400;
  /** The key template placeholder whose value was unusable (`#id`), when a template built the name. */
  readonly parameter?: string;
}

/** Each name cut to its first 200 characters, as bodies and extensions carry it. */
export function shortLockName(lockName: string | readonly string[]): string | readonly string[] {
  return typeof lockName === 'string' ? shortName(lockName) : lockName.map(shortName);
}
