import { Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { cookieValue, SESSION_COOKIE, verifySession } from './admin-session';

/**
 * Whether a `Host` header is a loopback name (`localhost`, `*.localhost`, `127.0.0.1`, `[::1]`, any
 * port). A request from this machine is not enough: a page of another site whose name an attacker
 * rebound to 127.0.0.1 (DNS rebinding) is sent from this machine too, by the browser, but with the
 * attacker's name as its `Host`.
 */
function isLoopbackHost(host: string | undefined): boolean {
  const name = /^(\[::1\]|[a-z0-9.-]+)(?::\d{1,5})?$/.exec((host ?? '').trim().toLowerCase())?.[1];
  return name === 'localhost' || name === '127.0.0.1' || name === '[::1]' || (!!name && name.endsWith('.localhost'));
}

/**
 * The sample's stand-in for a real admin guard, naming the user for the lock board's audit line. With
 * `ADMIN_TOKEN` set: `Authorization: Bearer <ADMIN_TOKEN>` (curl, scripts) or the session cookie that
 * `POST /admin/session` gives a browser (admin-session.controller.ts), since a browser visiting the
 * board sends no `Authorization` header. Without it: requests from this machine to a loopback name
 * only (the sample listens on loopback). Use your app's own auth in production.
 */
@Injectable()
export class LocalAdminGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<{
      headers: Record<string, string | undefined>;
      socket?: { remoteAddress?: string };
      user?: unknown;
    }>();
    const token = process.env.ADMIN_TOKEN;
    if (token) {
      const bearer = request.headers.authorization === `Bearer ${token}`;
      if (!bearer && !verifySession(token, cookieValue(request.headers.cookie, SESSION_COOKIE), Date.now())) return false;
      request.user = { id: bearer ? 'admin' : 'admin (browser session)' };
      return true;
    }
    const from = request.socket?.remoteAddress ?? '';
    if (!['127.0.0.1', '::1', '::ffff:127.0.0.1'].includes(from)) return false;
    if (!isLoopbackHost(request.headers.host)) return false;
    request.user = { id: 'local-admin' };
    return true;
  }
}
