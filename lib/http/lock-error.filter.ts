import { ArgumentsHost, Catch, ExceptionFilter, HttpStatus, Logger } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { throwError } from 'rxjs';
import {
  InvalidLockNameError,
  KeyTemplateError,
  LockDeadlockError,
  LockNameConflictError,
  LockNamePatternError,
  LockNameTooLongError,
  LockTimeoutError,
  LockUnavailableError,
  shortLockName,
} from '../errors';
import { LOCK_ERROR_CAUSE, shortName } from '../lock.messages';

/**
 * The lock errors the filter answers: contention (423), a wait refused as a deadlock (409), a key of
 * the lock holding something else (409), Redis unusable (503), an unusable name or `list()` pattern (400).
 */
export type AnsweredLockError =
  | LockTimeoutError
  | LockDeadlockError
  | LockNameConflictError
  | LockUnavailableError
  | KeyTemplateError
  | LockNameTooLongError
  | InvalidLockNameError
  | LockNamePatternError;

/** The caller's input the library cannot use: answered 400 Bad Request. */
const BAD_REQUEST_ERRORS = [KeyTemplateError, LockNameTooLongError, InvalidLockNameError, LockNamePatternError] as const;
const isBadRequest = (error: AnsweredLockError): error is KeyTemplateError | LockNameTooLongError | InvalidLockNameError | LockNamePatternError =>
  BAD_REQUEST_ERRORS.some((type) => error instanceof type);

/** The JSON body of a 423 answer. */
export interface LockedResponseBody {
  /** The HTTP status, 423. */
  statusCode: 423;
  /** The status text. */
  error: 'Locked';
  /** The error's message. */
  message: string;
  /** The lock name(s), each cut to 200 characters. */
  lockName: string | readonly string[];
  /** How long the acquisition waited (ms). */
  waitTime: number;
}

/**
 * The JSON body of a 409 answer: a wait refused because it closed a deadlock (docs/deadlocks.md).
 * `lockName` lists the cycle's locks in order, each once (always an array, even for one lock).
 */
export interface DeadlockResponseBody {
  /** The HTTP status, 409. */
  statusCode: 409;
  /** The status text. */
  error: 'Conflict';
  /** The error's message. */
  message: string;
  /** The cycle's lock names in order, each once, each cut to 200 characters. */
  lockName: readonly string[];
}

/**
 * The JSON body of a 409 answer for a `LockNameConflictError`: a key of the lock holds something else
 * (an application's value at the lock's name), which the lock did not touch.
 */
export interface LockNameConflictResponseBody {
  /** The HTTP status, 409. */
  statusCode: 409;
  /** The status text. */
  error: 'Conflict';
  /** The error's message: the key, what it holds and what the lock expected there. */
  message: string;
  /** The lock name(s), each cut to 200 characters. */
  lockName: string | readonly string[];
}

/** The JSON body of a 503 answer (it comes with a `Retry-After` header). */
export interface LockUnavailableResponseBody {
  /** The HTTP status, 503. */
  statusCode: 503;
  /** The status text. */
  error: 'Service Unavailable';
  /** The error's message. */
  message: string;
  /** The lock name(s), each cut to 200 characters. */
  lockName: string | readonly string[];
}

/**
 * The JSON body of a 400 answer: a key template value, a lock name or a `list({ match })` pattern the
 * library cannot use (the caller's input). `parameter` names the template placeholder at fault (`#id`) when there is one.
 */
export interface BadLockNameResponseBody {
  /** The HTTP status, 400. */
  statusCode: 400;
  /** The status text. */
  error: 'Bad Request';
  /** The error's message. */
  message: string;
  /** The key template placeholder at fault (`#id`), when there is one. */
  parameter?: string;
}

/**
 * The HTTP answer for a lock error: status, body and headers. Names in bodies are cut to 200
 * characters. A body never carries Redis's internals (its error text, a script's hash or line): the
 * messages say what happened in plain words, and `cause` (which the filter logs) keeps the rest.
 */
export function lockErrorResponse(error: AnsweredLockError): {
  /** The HTTP status: 400, 409, 423 or 503. */
  status: number;
  /** The JSON body. */
  body: LockedResponseBody | DeadlockResponseBody | LockNameConflictResponseBody | LockUnavailableResponseBody | BadLockNameResponseBody;
  /** Headers to set (`Retry-After` with a 503). */
  headers: Record<string, string>;
} {
  if (isBadRequest(error)) {
    const parameter = error instanceof KeyTemplateError ? error.parameter : undefined;
    return {
      status: HttpStatus.BAD_REQUEST,
      body: { statusCode: 400, error: 'Bad Request', message: error.message, ...(parameter === undefined ? {} : { parameter }) },
      headers: {},
    };
  }
  if (error instanceof LockDeadlockError) {
    return {
      status: HttpStatus.CONFLICT,
      body: { statusCode: 409, error: 'Conflict', message: error.message, lockName: error.lockName.map(shortName) },
      headers: {},
    };
  }
  if (error instanceof LockNameConflictError) {
    return {
      status: HttpStatus.CONFLICT,
      body: { statusCode: 409, error: 'Conflict', message: error.message, lockName: shortLockName(error.lockName) },
      headers: {},
    };
  }
  if (error instanceof LockUnavailableError) {
    return {
      status: HttpStatus.SERVICE_UNAVAILABLE,
      body: { statusCode: 503, error: 'Service Unavailable', message: error.message, lockName: shortLockName(error.lockName) },
      headers: { 'Retry-After': String(error.retryAfter) },
    };
  }
  return {
    status: HttpStatus.LOCKED,
    body: { statusCode: 423, error: 'Locked', message: error.message, lockName: shortLockName(error.lockName), waitTime: error.waitTime },
    headers: {},
  };
}

/** A gateway's client: a socket.io `Socket`, or a `ws` `WebSocket` (@nestjs/platform-ws). */
interface WsClient {
  emit?: (event: string, body: unknown) => unknown;
  send?: (message: string) => void;
  readyState?: number;
}

/** `WebSocket.OPEN` of the `ws` package (and of the WHATWG WebSocket). */
const WS_OPEN = 1;

/**
 * Delivers an `exception` event to a gateway's client. A socket.io socket's `emit` sends it; a `ws`
 * WebSocket's `emit` would only fire a local event (an EventEmitter's), so it gets the message
 * @nestjs/platform-ws itself writes for an event, `{ event, data }`, through `send`.
 */
function sendWsException(client: WsClient, body: unknown): void {
  if (typeof client.send === 'function' && typeof client.readyState === 'number') {
    if (client.readyState === WS_OPEN) client.send(JSON.stringify({ event: 'exception', data: body }));
    return;
  }
  client.emit?.('exception', body);
}

/**
 * Registered by LockModule for the whole application. In an HTTP request, a lock not acquired
 * within its `waitTime` (decorated method or `run`) answers 423 Locked, a wait refused as a deadlock
 * (`LockDeadlockError`) and a key of the lock holding something else (`LockNameConflictError`) answer
 * 409 Conflict, and Redis being unreachable answers 503 Service Unavailable with a `Retry-After`
 * header; all with a JSON body naming the lock in plain words (never Redis's own text), never 500.
 * A key template value, a name or a `list({ match })` pattern the library cannot use
 * (`KeyTemplateError`, `LockNameTooLongError`, `InvalidLockNameError`, `LockNamePatternError`) answers
 * 400 Bad Request, naming the template parameter when there is one. Contention is expected, so
 * nothing is logged for it; a 503's cause is logged as an error and a conflict's as a warning, with
 * Redis's text, at most once a minute per lock name. Other transports get
 * the same body: an RPC caller (@nestjs/microservices) as the error of its call, a WebSocket client
 * as an `exception` event (socket.io and `ws` alike; Nest applies no app-wide filter to gateways, so
 * a gateway names this one in `@UseFilters`). Anything else (GraphQL, plain providers) sees the error rethrown as if no
 * filter existed: GraphQL servers answer its `extensions.code` (`LOCKED`, `CONFLICT`,
 * `SERVICE_UNAVAILABLE`, `BAD_REQUEST`).
 */
@Catch(LockTimeoutError, LockDeadlockError, LockNameConflictError, LockUnavailableError, ...BAD_REQUEST_ERRORS)
export class LockErrorFilter implements ExceptionFilter<AnsweredLockError> {
  private readonly causes = new CauseLog(new Logger(LockErrorFilter.name));

  constructor(private readonly adapterHost: HttpAdapterHost) {}

  catch(error: AnsweredLockError, host: ArgumentsHost): unknown {
    this.causes.note(error);
    switch (host.getType<string>()) {
      case 'http':
        return this.reply(error, host);
      case 'rpc': {
        const { body } = lockErrorResponse(error);
        return throwError(() => body);
      }
      case 'ws':
        sendWsException(host.switchToWs().getClient<WsClient>(), lockErrorResponse(error).body);
        return undefined;
      default:
        throw error;
    }
  }

  private reply(error: AnsweredLockError, host: ArgumentsHost): void {
    const { httpAdapter } = this.adapterHost;
    const response: unknown = host.switchToHttp().getResponse();
    if (httpAdapter.isHeadersSent(response)) {
      httpAdapter.end(response);
      return;
    }
    const { status, body, headers } = lockErrorResponse(error);
    for (const [name, value] of Object.entries(headers)) httpAdapter.setHeader(response, name, value);
    httpAdapter.reply(response, body, status);
  }
}

/** How long the filter stays quiet about one lock name's failures after logging one. */
const CAUSE_LOG_INTERVAL_MS = 60_000;
/** Names remembered at most (older ones are forgotten first): a flood of names cannot grow memory. */
const CAUSE_LOG_NAMES = 10_000;

/** An error's cause as the log shows it: its class, text (Redis's own, with a script's hash and line) and its own cause. */
function describeCause(cause: unknown): string {
  if (!(cause instanceof Error)) return String(cause);
  const inner = cause.cause === undefined ? '' : ` <- ${describeCause(cause.cause)}`;
  return `${cause.name}: ${cause.message}${inner}`;
}

/**
 * The log of what clients are not told. A 5xx answer (Redis unavailable) is logged as an error and a
 * conflict (a key of the lock holds something else: a misconfiguration) as a warning, each with its
 * cause, at most once a minute per lock name: a permanent fault shows in the log without flooding it.
 */
class CauseLog {
  /** Lock name(s) -> when last logged (ms, this process's clock); in the order they were logged. */
  private readonly loggedAt = new Map<string, number>();

  constructor(private readonly logger: Logger) {}

  note(error: AnsweredLockError): void {
    const server = error instanceof LockUnavailableError;
    if (!server && !(error instanceof LockNameConflictError)) return;
    const name = typeof error.lockName === 'string' ? error.lockName : JSON.stringify(error.lockName);
    const now = Date.now();
    const last = this.loggedAt.get(name);
    if (last !== undefined && now - last < CAUSE_LOG_INTERVAL_MS) return;
    this.loggedAt.delete(name);
    this.loggedAt.set(name, now);
    if (this.loggedAt.size > CAUSE_LOG_NAMES) this.loggedAt.delete(this.loggedAt.keys().next().value as string);
    const line = LOCK_ERROR_CAUSE(error.statusCode, error.lockName, error.message, describeCause(error.cause));
    if (server) this.logger.error(line);
    else this.logger.warn(line);
  }
}
