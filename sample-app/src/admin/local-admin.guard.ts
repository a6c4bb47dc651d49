import { Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';

/**
 * The sample's stand-in for a real admin guard: lets in requests from this machine only (the
 * sample listens on loopback), or with `Authorization: Bearer <ADMIN_TOKEN>` when that variable is
 * set, and names the user for the lock board's audit line. Use your app's own auth in production.
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
    request.user = { id: 'local-admin' };
    return true;
  }
}
