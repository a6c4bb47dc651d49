import { request as httpRequest } from 'node:http';
import { Injectable, type CanActivate, type ExecutionContext, type INestApplication, type LoggerService } from '@nestjs/common';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import { LockModule, type LockModuleOptions } from '../../lib';
import { LockBoardModule, type LockBoardOptions } from '../../lib/board';

/** Lets a request in only with `Authorization: Bearer ops` (then `request.user` is `{ id: 'ops-1' }`). */
@Injectable()
export class TokenGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<{ headers: Record<string, string | undefined>; user?: unknown }>();
    if (request.headers.authorization !== 'Bearer ops') return false;
    request.user = { id: 'ops-1' };
    return true;
  }
}

export const AUTH = { Authorization: 'Bearer ops' };

/** The context Nest passes last (after an error's stack, when there is one). */
const contextOf = (params: unknown[]): string | undefined => {
  const last = params.at(-1);
  return typeof last === 'string' ? last : undefined;
};

/** Collects what the app logs, by context, for the audit line of a force release. */
export class LogCapture implements LoggerService {
  readonly lines: Array<{ level: string; message: string; context?: string }> = [];
  log(message: unknown, ...params: unknown[]): void {
    this.lines.push({ level: 'log', message: String(message), context: contextOf(params) });
  }
  warn(message: unknown, ...params: unknown[]): void {
    this.lines.push({ level: 'warn', message: String(message), context: contextOf(params) });
  }
  error(message: unknown, ...params: unknown[]): void {
    this.lines.push({ level: 'error', message: String(message), context: contextOf(params) });
  }
  debug(): void {}
  verbose(): void {}
}

export type Platform = 'express' | 'fastify';

/** A Nest HTTP app with LockModule and the board under the global prefix `api`, listening on a free port. */
export async function startBoardApp(
  platform: Platform,
  lockOptions: LockModuleOptions,
  boardOptions: Partial<LockBoardOptions> & { path?: string } = {},
  logger: LoggerService | false = false,
): Promise<{ app: INestApplication; url: string }> {
  const moduleRef = await Test.createTestingModule({
    imports: [LockModule.forRoot(lockOptions), LockBoardModule.forRoot({ guard: TokenGuard, ...boardOptions } as LockBoardOptions & { path?: string })],
  }).compile();
  const app = platform === 'fastify' ? moduleRef.createNestApplication(new FastifyAdapter()) : moduleRef.createNestApplication();
  app.useLogger(logger);
  app.setGlobalPrefix('api');
  await app.listen(0, '127.0.0.1');
  const address = app.getHttpServer().address() as { port: number };
  return { app, url: `http://127.0.0.1:${address.port}` };
}

/**
 * One HTTP request to `url` (the app's `http://127.0.0.1:<port>`) with the `Host` header `host`, as a
 * browser sends it for a page whose name resolves to 127.0.0.1 (fetch cannot set Host).
 */
export function requestWithHost(
  url: string,
  host: string,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string,
): Promise<{ status: number; body: string }> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    const sent = httpRequest({ host: '127.0.0.1', port: Number(port), method, path, headers: { ...headers, Host: host } }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body: text }));
    });
    sent.on('error', reject);
    sent.end(body);
  });
}
