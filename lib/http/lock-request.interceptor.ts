import { CallHandler, ExecutionContext, HttpException, Injectable, NestInterceptor } from '@nestjs/common';
import { Observable } from 'rxjs';
import { lockedMethodOf } from '../decorators/distributed-lock.decorator';
import { REQUEST_CLOSED } from '../lock.messages';
import { runWithRequestSignal } from '../runtime/request-signal';

/** Status of the (never delivered) answer to a request whose client went away (nginx's 499). */
const CLIENT_CLOSED_REQUEST = 499;

interface ClosableResponse {
  writableFinished?: boolean;
  destroyed?: boolean;
  once(event: 'close', listener: () => void): unknown;
  off(event: 'close', listener: () => void): unknown;
}

/** Express's response is Node's `ServerResponse`; Fastify's reply carries it as `raw`. */
function nodeResponse(response: unknown): ClosableResponse | undefined {
  const candidate = (response as { raw?: unknown } | undefined)?.raw ?? response;
  return typeof (candidate as ClosableResponse | undefined)?.once === 'function' ? (candidate as ClosableResponse) : undefined;
}

/**
 * Registered by LockModule for the whole application. For an HTTP route whose handler has a lock
 * decorator, it gives the call an `AbortSignal` aborted when the connection closes before the
 * answer was sent (the client disconnected): the decorator's wait for the lock stops at once and
 * leaves no waiter, subscription or fair-line place behind. Other routes are passed through as is.
 */
@Injectable()
export class LockRequestInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType() !== 'http' || !lockedMethodOf(context.getHandler())) return next.handle();
    const response = nodeResponse(context.switchToHttp().getResponse());
    if (!response || response.destroyed) return next.handle();
    const controller = new AbortController();
    // The request's socket closed before the response finished: nobody is waiting for the answer.
    const onClose = (): void => {
      if (!response.writableFinished) controller.abort(new HttpException(REQUEST_CLOSED, CLIENT_CLOSED_REQUEST));
    };
    response.once('close', onClose);
    return new Observable((subscriber) => {
      // Subscribing runs the handler: inside the storage, so the lock wrapper finds the signal.
      const subscription = runWithRequestSignal(controller.signal, () => next.handle().subscribe(subscriber));
      return () => {
        subscription.unsubscribe();
        response.off('close', onClose);
      };
    });
  }
}
