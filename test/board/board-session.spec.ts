import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { LockModule, LockService } from '../../lib';
import { LockBoardModule, type BoardSnapshot } from '../../lib/board';
import { AdminSessionController } from '../../sample-app/src/admin/admin-session.controller';
import { signSession } from '../../sample-app/src/admin/admin-session';
import { LocalAdminGuard } from '../../sample-app/src/admin/local-admin.guard';
import { startRedis, type TestRedis } from '../support/redis-server';

/**
 * The lock board behind a bearer token, visited from a browser (issue 43, point 7): a browser sends
 * no `Authorization` header with a page visit, a `<script>` or a `<link>`. The board's script and
 * stylesheet carry no data and skip its guard; the page and its API stay guarded, and the sample
 * app's guard also takes the session cookie its sign-in form gives (sample-app/src/admin/).
 */
describe('lock board behind a bearer token, from a browser (the sample app: ADMIN_TOKEN and a session cookie)', () => {
  const TOKEN = 's3cret-admin-token';
  let redis: TestRedis;
  let app: INestApplication;
  let url: string;
  let savedToken: string | undefined;

  beforeAll(async () => {
    savedToken = process.env.ADMIN_TOKEN;
    process.env.ADMIN_TOKEN = TOKEN;
    redis = await startRedis();
    const moduleRef = await Test.createTestingModule({
      imports: [LockModule.forRoot({ redis: redis.url }), LockBoardModule.forRoot({ guard: LocalAdminGuard })],
      controllers: [AdminSessionController],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
    url = (await app.getUrl()).replace('[::1]', '127.0.0.1');
    // Held from the start: the board's snapshot is one walk shared by its viewers for refreshMs.
    await app.get(LockService).getLock('orders:42').lock({ leaseTime: 60_000 });
  });
  afterAll(async () => {
    await app?.close();
    await redis?.stop();
    if (savedToken === undefined) delete process.env.ADMIN_TOKEN;
    else process.env.ADMIN_TOKEN = savedToken;
  });

  const get = (path: string, headers: Record<string, string> = {}) => fetch(`${url}${path}`, { headers, redirect: 'manual' });
  const signIn = (token: string) =>
    fetch(`${url}/admin/session`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token }).toString(),
      redirect: 'manual',
    });

  it('a browser visit (no Authorization header) gets 403 for the page and its API, and the script and stylesheet anyway', async () => {
    expect((await get('/lock-board')).status).toBe(403);
    expect((await get('/lock-board/api/snapshot')).status).toBe(403);
    expect((await get('/lock-board/board.js')).status).toBe(200);
    expect((await get('/lock-board/board.css')).status).toBe(200);
    // A tool with the bearer token is let in.
    expect((await get('/lock-board/api/snapshot', { Authorization: `Bearer ${TOKEN}` })).status).toBe(200);
  });

  it('signing in with the wrong token answers 401 and no cookie', async () => {
    const refused = await signIn('guess');
    expect(refused.status).toBe(401);
    expect(refused.headers.get('set-cookie')).toBeNull();
  });

  it('signing in gives an HttpOnly, SameSite=Strict session cookie that opens the page and its API', async () => {
    expect((await get('/admin/login')).status).toBe(200);
    const signedIn = await signIn(TOKEN);
    expect(signedIn.status).toBe(303);
    expect(signedIn.headers.get('location')).toBe('../lock-board');
    const setCookie = signedIn.headers.get('set-cookie') ?? '';
    expect(setCookie).toMatch(/^admin_session=\d+\.[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Strict; Max-Age=28800$/);
    const cookie = setCookie.split(';')[0];

    expect((await get('/lock-board', { Cookie: cookie })).status).toBe(200);
    const snapshot = await get('/lock-board/api/snapshot', { Cookie: cookie, 'Sec-Fetch-Site': 'same-origin' });
    expect(snapshot.status).toBe(200);
    expect(((await snapshot.json()) as BoardSnapshot).locks.map((lock) => lock.name)).toEqual(['orders:42']);
  });

  it('a forged, expired or foreign cookie is refused', async () => {
    const now = Date.now();
    const valid = signSession(TOKEN, now);
    const forged = `${Number(valid.split('.')[0]) + 1}.${valid.split('.')[1]}`; // a later expiry, the old signature
    for (const value of [forged, signSession(TOKEN, now - 10_000, 1_000), signSession('another-secret', now), 'admin', '']) {
      expect((await get('/lock-board/api/snapshot', { Cookie: `admin_session=${value}` })).status).toBe(403);
    }
    expect((await get('/lock-board/api/snapshot', { Cookie: `admin_session=${valid}` })).status).toBe(200);
  });
});
