import { ArgumentsHost, Catch, ExceptionFilter, HttpStatus } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { throwError } from 'rxjs';
import {
  InvalidLockNameError,
  KeyTemplateError,
  LockDeadlockError,
  LockNamePatternError,
  LockNameTooLongError,
  LockTimeoutError,
  LockUnavailableError,
  shortLockName,
} from '../errors';
import { shortName } from '../lock.messages';

/**
 * The lock errors the filter answers: contention (423), a wait refused as a deadlock (409), Redis
 * unusable (503), an unusable name or `list()` pattern (400).
 */
export type AnsweredLockError =
  | LockTimeoutError
  | LockDeadlockError
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
  statusCode: 423;
  error: 'Locked';
  message: string;
  lockName: string | readonly string[];
  waitTime: number;
}

/**
 * The JSON body of a 409 answer: a wait refused because it closed a deadlock (docs/deadlocks.md).
 * `lockName` lists the cycle's locks in order, each once (always an array, even for one lock).
 */
export interface DeadlockResponseBody {
  statusCode: 409;
  error: 'Conflict';
  message: string;
  lockName: readonly string[];
}

/** The JSON body of a 503 answer (it comes with a `Retry-After` header). */
export interface LockUnavailableResponseBody {
  statusCode: 503;
  error: 'Service Unavailable';
  message: string;
  lockName: string | readonly string[];
}

/**
 * The JSON body of a 400 answer: a key template value, a lock name or a `list({ match })` pattern the
 * library cannot use (the caller's input). `parameter` names the template placeholder at fault (`#id`) when there is one.
 */
export interface BadLockNameResponseBody {
  statusCode: 400;
  error: 'Bad Request';
  message: string;
  parameter?: string;
}

/** The HTTP answer for a lock error: status, body and headers. Names in bodies are cut to 200 characters. */
export function lockErrorResponse(error: AnsweredLockError): {
  status: number;
  body: LockedResponseBody | DeadlockResponseBody | LockUnavailableResponseBody | BadLockNameResponseBody;
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
 * (`LockDeadlockError`) answers 409 Conflict, and Redis being unreachable
 * answers 503 Service Unavailable with a `Retry-After` header; both with a JSON body naming the
 * lock, never 500. A key template value, a name or a `list({ match })` pattern the library cannot use
 * (`KeyTemplateError`, `LockNameTooLongError`, `InvalidLockNameError`, `LockNamePatternError`) answers
 * 400 Bad Request, naming the template parameter when there is one. Contention is expected, so nothing is logged as an error. Other transports get
 * the same body: an RPC caller (@nestjs/microservices) as the error of its call, a WebSocket client
 * as an `exception` event (socket.io and `ws` alike; Nest applies no app-wide filter to gateways, so
 * a gateway names this one in `@UseFilters`). Anything else (GraphQL, plain providers) sees the error rethrown as if no
 * filter existed: GraphQL servers answer its `extensions.code` (`LOCKED`, `CONFLICT`,
 * `SERVICE_UNAVAILABLE`, `BAD_REQUEST`).
 */
@Catch(LockTimeoutError, LockDeadlockError, LockUnavailableError, ...BAD_REQUEST_ERRORS)
export class LockErrorFilter implements ExceptionFilter<AnsweredLockError> {
  constructor(private readonly adapterHost: HttpAdapterHost) {}

  catch(error: AnsweredLockError, host: ArgumentsHost): unknown {
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
