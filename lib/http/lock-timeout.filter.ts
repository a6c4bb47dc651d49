import { ArgumentsHost, Catch, ExceptionFilter, HttpStatus } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { throwError } from 'rxjs';
import { LockTimeoutError } from '../errors';

/** The JSON body of a 423 answer. */
export interface LockedResponseBody {
  statusCode: 423;
  error: 'Locked';
  message: string;
  lockName: string | readonly string[];
  waitTime: number;
}

/**
 * Registered by LockModule for the whole application: in an HTTP request, a lock not acquired within
 * its `waitTime` (decorated method or `run`) answers 423 Locked with a body naming the lock, not 500.
 * Contention is expected, so nothing is logged as an error. Other contexts get the error itself: an
 * RPC caller receives it through the transport, a WebSocket client as an `exception` event, anything
 * else (GraphQL, plain providers) sees it rethrown as if no filter existed.
 */
@Catch(LockTimeoutError)
export class LockTimeoutFilter implements ExceptionFilter<LockTimeoutError> {
  constructor(private readonly adapterHost: HttpAdapterHost) {}

  catch(error: LockTimeoutError, host: ArgumentsHost): unknown {
    switch (host.getType<string>()) {
      case 'http':
        return this.reply(error, host);
      case 'rpc':
        return throwError(() => error);
      case 'ws':
        host.switchToWs().getClient<{ emit?: (event: string, body: unknown) => void }>().emit?.('exception', {
          status: 'error',
          message: error.message,
          lockName: error.lockName,
        });
        return undefined;
      default:
        throw error;
    }
  }

  private reply(error: LockTimeoutError, host: ArgumentsHost): void {
    const { httpAdapter } = this.adapterHost;
    const response: unknown = host.switchToHttp().getResponse();
    if (httpAdapter.isHeadersSent(response)) {
      httpAdapter.end(response);
      return;
    }
    const body: LockedResponseBody = {
      statusCode: HttpStatus.LOCKED,
      error: 'Locked',
      message: error.message,
      lockName: error.lockName,
      waitTime: error.waitTime,
    };
    httpAdapter.reply(response, body, HttpStatus.LOCKED);
  }
}
