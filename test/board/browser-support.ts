import { existsSync } from 'node:fs';
import { createServer, request as httpRequest, type Server } from 'node:http';
import { Injectable, type CanActivate, type ExecutionContext, type INestApplication, type LoggerService } from '@nestjs/common';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Test, type TestingModule } from '@nestjs/testing';
import { chromium, type Browser, type BrowserContext, type Locator, type Page } from 'playwright-core';
import { LockModule, type LockModuleOptions } from '../../lib';
import { LockBoardModule, type LockBoardOptions } from '../../lib/board';

/**
 * What the browser tests of the lock board (browser.spec.ts) and the screenshot script
 * (scripts/board-screenshot.ts) share: Debian's Chromium driven by playwright-core (which never
 * downloads a browser), a guard that takes a header or a cookie, and a board app on Express or
 * Fastify under the global prefix `api`.
 */

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export const chromiumInstalled = (): boolean => existsSync(CHROMIUM_PATH);

/** One headless Chromium (a new empty profile each launch). */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS });
}

/** The secret the test guard wants, as a header (`x-board-auth`) or a cookie (`board_auth`). */
export const BOARD_SECRET = 'ops-secret';
export const AUTH_HEADERS = { 'x-board-auth': BOARD_SECRET };

/** Lets a request in only with the header or the cookie; then `request.user` is `{ id: 'ops-1' }`. */
@Injectable()
export class HeaderOrCookieGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<{ headers: Record<string, string | string[] | undefined>; user?: unknown }>();
    const header = request.headers['x-board-auth'];
    const cookie = String(request.headers.cookie ?? '');
    const byCookie = cookie.split(';').some((part) => part.trim() === `board_auth=${BOARD_SECRET}`);
    if (header !== BOARD_SECRET && !byCookie) return false;
    request.user = { id: 'ops-1' };
    return true;
  }
}

/** Collects what the apps log (the board's audit lines have the context `LockBoard`). */
export { LogCapture as RecordingLogger } from './board-app';

import type { Platform } from './board-app';
export type { Platform };

export interface BoardApp {
  readonly app: INestApplication;
  /** `http://127.0.0.1:<port>` */
  readonly origin: string;
  /** The page: `<origin>/api/lock-board` */
  readonly boardUrl: string;
}

/** A Nest HTTP app with LockModule and the board (guard: HeaderOrCookieGuard) under the global prefix `api`. */
export async function startBoardApp(
  platform: Platform,
  lockOptions: LockModuleOptions,
  boardOptions: Partial<LockBoardOptions> = {},
  logger: LoggerService | false = false,
): Promise<BoardApp> {
  const moduleRef = await Test.createTestingModule({
    imports: [LockModule.forRoot(lockOptions), LockBoardModule.forRoot({ guard: HeaderOrCookieGuard, ...boardOptions } as LockBoardOptions)],
  }).compile();
  const app = platform === 'fastify' ? moduleRef.createNestApplication(new FastifyAdapter(), { logger }) : moduleRef.createNestApplication({ logger });
  app.setGlobalPrefix('api');
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as { port: number };
  const origin = `http://127.0.0.1:${port}`;
  return { app, origin, boardUrl: `${origin}/api/lock-board` };
}

/** A plain Nest application context with LockModule (another instance that takes locks). */
export async function startWorker(lockOptions: LockModuleOptions, logger: LoggerService | false = false): Promise<TestingModule> {
  const moduleRef = await Test.createTestingModule({ imports: [LockModule.forRoot(lockOptions)] }).compile();
  moduleRef.useLogger(logger);
  await moduleRef.init();
  return moduleRef;
}

/** A browser context that passes the guard by cookie (sent to every port of 127.0.0.1, as a browser does). */
export async function authenticatedContext(browser: Browser, origin: string, options: Parameters<Browser['newContext']>[0] = {}): Promise<BrowserContext> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, ...options });
  // Well within jest's 30 s, so a missing element fails with the locator's own message.
  context.setDefaultTimeout(10_000);
  await context.addCookies([{ name: 'board_auth', value: BOARD_SECRET, url: origin }]);
  return context;
}

/** A tiny HTTP server on another port (another origin) serving fixed HTML pages by path. */
export async function startOtherOrigin(pages: Record<string, string>): Promise<{ origin: string; close(): Promise<void> }> {
  const server: Server = createServer((request, response) => {
    const body = pages[(request.url ?? '/').split('?')[0]];
    if (body === undefined) {
      response.writeHead(404).end();
      return;
    }
    response.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    origin: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/**
 * A reverse proxy in front of `target` as nginx's `proxy_pass http://<target>;` with its defaults:
 * `Host` becomes the upstream's (`proxy_set_header Host $proxy_host;`) and no `X-Forwarded-Host`.
 */
export async function startReverseProxy(target: string): Promise<{ origin: string; close(): Promise<void> }> {
  const upstreamUrl = new URL(target);
  const server: Server = createServer((incoming, outgoing) => {
    const upstream = httpRequest(
      {
        host: upstreamUrl.hostname,
        port: Number(upstreamUrl.port),
        method: incoming.method,
        path: incoming.url,
        headers: { ...incoming.headers, host: upstreamUrl.host },
      },
      (answer) => {
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(outgoing);
      },
    );
    upstream.on('error', () => outgoing.writeHead(502).end());
    incoming.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    origin: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Escapes `text` for a RegExp. */
export const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The row of `tableTestId` whose row header reads exactly `shown` (the name as the page shows it). */
export function rowNamed(page: Page, tableTestId: string, shown: string): Locator {
  return page
    .getByTestId(tableTestId)
    .locator('tbody tr')
    .filter({ has: page.locator('th', { hasText: new RegExp(`^\\s*${escapeRegExp(shown)}\\s*$`) }) });
}

/** Milliseconds from the page's duration text ("12.3 s", "4 min 05 s", "1 h 02 min"); NaN otherwise. */
export function parseShownDuration(text: string | null): number {
  const value = (text ?? '').trim();
  let match = /^(\d+(?:\.\d+)?) s$/.exec(value);
  if (match) return Number(match[1]) * 1000;
  match = /^(\d+) min (\d+) s$/.exec(value);
  if (match) return (Number(match[1]) * 60 + Number(match[2])) * 1000;
  match = /^(\d+) h (\d+) min$/.exec(value);
  if (match) return (Number(match[1]) * 60 + Number(match[2])) * 60_000;
  return Number.NaN;
}
