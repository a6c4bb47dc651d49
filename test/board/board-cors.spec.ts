import type { INestApplication } from '@nestjs/common';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import { LockModule, LockService } from '../../lib';
import { LockBoardModule, type LockBoardOptions } from '../../lib/board';
import { startRedis, type TestRedis } from '../support/redis-server';
import { BOARD_SECRET, HeaderOrCookieGuard } from './browser-support';
import type { Platform } from './board-app';

/**
 * The board in an app with a permissive app-wide CORS config (`enableCors({ origin: true,
 * credentials: true })`, common for an SPA on another origin): that config answers any preflight,
 * allowing whatever headers were asked for, so another site's script may send `X-Forwarded-Host`
 * with the user's cookie. The board must not take that header as the request's host: a browser
 * without `Sec-Fetch-Site` (Safari before 16.4, Firefox before 90, embedded webviews) is judged by
 * its `Origin` against `Host` alone (docs/lock-board.md#another-site-and-a-reverse-proxy).
 *
 * Each request is what such a browser sends: the preflight, then the request with the user's
 * cookie, `Origin: http://evil.example` and the headers the script set.
 */
const EVIL = 'http://evil.example';

async function startCorsApp(platform: Platform, redisUrl: string): Promise<{ app: INestApplication; url: string }> {
  const moduleRef = await Test.createTestingModule({
    imports: [
      LockModule.forRoot({ redis: redisUrl }),
      LockBoardModule.forRoot({ guard: HeaderOrCookieGuard, allowForceRelease: true } as LockBoardOptions),
    ],
  }).compile();
  const app = platform === 'fastify' ? moduleRef.createNestApplication(new FastifyAdapter(), { logger: false }) : moduleRef.createNestApplication({ logger: false });
  app.enableCors({ origin: true, credentials: true });
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as { port: number };
  return { app, url: `http://127.0.0.1:${port}` };
}

describe.each<Platform>(['express', 'fastify'])('lock board in an app with app-wide CORS (%s)', (platform) => {
  let redis: TestRedis;
  let app: INestApplication;
  let url: string;
  const cookie = `board_auth=${BOARD_SECRET}`;

  beforeAll(async () => {
    redis = await startRedis();
    ({ app, url } = await startCorsApp(platform, redis.url));
  });
  afterAll(async () => {
    await app?.close();
    await redis?.stop();
  });

  it("another site's script cannot read the snapshot by sending X-Forwarded-Host (browser without Sec-Fetch-Site)", async () => {
    const preflight = await fetch(`${url}/lock-board/api/snapshot`, {
      method: 'OPTIONS',
      headers: { Origin: EVIL, 'Access-Control-Request-Method': 'GET', 'Access-Control-Request-Headers': 'x-forwarded-host' },
    });
    // The app's CORS config lets the header through: only the board stands in the way.
    expect(preflight.headers.get('access-control-allow-origin')).toBe(EVIL);
    expect(preflight.headers.get('access-control-allow-headers') ?? '').toMatch(/x-forwarded-host/i);
    const read = await fetch(`${url}/lock-board/api/snapshot`, { headers: { Origin: EVIL, Cookie: cookie, 'X-Forwarded-Host': 'evil.example' } });
    expect(read.status).toBe(403);
    // The same request from the board's own origin is answered.
    const own = await fetch(`${url}/lock-board/api/snapshot`, { headers: { Origin: url, Cookie: cookie } });
    expect(own.status).toBe(200);
  });

  it("another site's script cannot force-release by sending X-Forwarded-Host (browser without Sec-Fetch-Site)", async () => {
    const locks = app.get(LockService);
    const lock = locks.getLock('payments:nightly');
    await lock.lock({ leaseTime: 60_000 });
    try {
      const info = await locks.inspect('payments:nightly');
      const post = await fetch(`${url}/lock-board/api/force-release`, {
        method: 'POST',
        headers: { Origin: EVIL, Cookie: cookie, 'Content-Type': 'application/json', 'X-Lock-Board': '1', 'X-Forwarded-Host': 'evil.example' },
        body: JSON.stringify({ name: 'payments:nightly', kind: 'reentrant', fencingToken: info.fencingToken, ownerId: info.holders[0].ownerId }),
      });
      expect(post.status).toBe(403);
      expect((await locks.inspect('payments:nightly')).fencingToken).toBe(info.fencingToken);
    } finally {
      await lock.forceUnlock();
    }
  });
});
