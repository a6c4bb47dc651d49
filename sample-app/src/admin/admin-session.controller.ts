import { Body, Controller, Get, Header, HttpCode, NotFoundException, Post, Req, Res, UnauthorizedException } from '@nestjs/common';
import { sameSecret, sessionCookie, signSession, SESSION_TTL_MS } from './admin-session';

/** What the handlers read of Express's request and response. */
interface SessionRequest {
  readonly secure?: boolean;
}
interface SessionResponse {
  setHeader(name: string, value: string): void;
}

const LOGIN_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Sign in: sample-app admin</title></head>
<body><main><h1>Sign in</h1>
<form method="post" action="session">
<label>Admin token <input type="password" name="token" autocomplete="current-password" required></label>
<button type="submit">Sign in</button>
</form></main></body></html>
`;

/**
 * A browser sign-in for the lock board behind a bearer token (docs/lock-board.md#a-bearer-token-guard):
 * `GET /admin/login` is a form, `POST /admin/session` checks the token once and answers a session
 * cookie, then sends the browser to the board, whose page, script and API requests carry the cookie
 * by themselves. Only when `ADMIN_TOKEN` is set (without it the sample's guard admits this machine).
 */
@Controller('admin')
export class AdminSessionController {
  @Get('login')
  @Header('Content-Type', 'text/html; charset=utf-8')
  @Header('Content-Security-Policy', "default-src 'none'; form-action 'self'; frame-ancestors 'none'")
  login(): string {
    return LOGIN_PAGE;
  }

  @Post('session')
  @HttpCode(303)
  @Header('Location', '../lock-board')
  @Header('Cache-Control', 'no-store')
  session(@Body('token') token: unknown, @Req() request: SessionRequest, @Res({ passthrough: true }) response: SessionResponse): string {
    const secret = process.env.ADMIN_TOKEN;
    if (!secret) throw new NotFoundException('Sessions need ADMIN_TOKEN; without it the admin pages admit requests from this machine');
    if (typeof token !== 'string' || !sameSecret(token, secret)) throw new UnauthorizedException('Wrong admin token');
    response.setHeader('Set-Cookie', sessionCookie(signSession(secret, Date.now()), request.secure === true, SESSION_TTL_MS));
    return 'Signed in: the lock board is at ../lock-board';
  }
}
