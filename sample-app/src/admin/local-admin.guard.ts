import { Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';

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
 * The sample's stand-in for a real admin guard: lets in requests from this machine to a loopback
 * name only (the sample listens on loopback), or with `Authorization: Bearer <ADMIN_TOKEN>` when that
 * variable is set, and names the user for the lock board's audit line. Use your app's own auth in production.
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
      if (request.headers.authorization !== `Bearer ${token}`) return false;
      request.user = { id: 'admin' };
      return true;
    }
    const from = request.socket?.remoteAddress ?? '';
    if (!['127.0.0.1', '::1', '::ffff:127.0.0.1'].includes(from)) return false;
    if (!isLoopbackHost(request.headers.host)) return false;
    request.user = { id: 'local-admin' };
    return true;
  }
}
