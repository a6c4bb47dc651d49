import { LockError, LockUnavailableError } from '../errors';
import { NO_ANSWER } from '../lock.messages';

/**
 * Handed to one Redis call: `expired` turns true when the caller stops waiting for it, so the call
 * sends nothing more on its own (no EVAL after a late NOSCRIPT that could grant a lock nobody waits
 * for any longer).
 */
export interface CallTicket {
  expired: boolean;
}

/** Whole seconds after which retrying a call bounded by `timeoutMs` makes sense. */
export const retryAfterSeconds = (timeoutMs: number): number => Math.max(1, Math.ceil(timeoutMs / 1000));

/** A Redis or connection failure as the library reports it; its own errors pass through unchanged. */
export function asLockError(lockName: string | readonly string[], error: unknown, timeoutMs: number): Error {
  return error instanceof LockError ? error : new LockUnavailableError(lockName, error, retryAfterSeconds(timeoutMs));
}

/**
 * Waits at most `timeoutMs` for `call`, whatever the client's own settings: a frozen server, a
 * dropped reply or a client that queues commands while disconnected all end in a
 * `LockUnavailableError` (with the Redis error, or "no answer within N ms", as `cause`).
 */
export function boundedCall<T>(
  lockName: string | readonly string[],
  timeoutMs: number,
  call: (ticket: CallTicket) => Promise<T>,
): Promise<T> {
  const ticket: CallTicket = { expired: false };
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => {
      ticket.expired = true;
      reject(new LockUnavailableError(lockName, new Error(NO_ANSWER(timeoutMs)), retryAfterSeconds(timeoutMs)));
    }, timeoutMs);
    let work: Promise<T>;
    try {
      work = call(ticket);
    } catch (error) {
      work = Promise.reject(error);
    }
    work.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        ticket.expired = true;
        reject(asLockError(lockName, error, timeoutMs));
      },
    );
  });
}

/** `work`, or a rejection with "no answer within `ms` ms" if it has not settled by then. */
export function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    work,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(NO_ANSWER(ms))), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}
