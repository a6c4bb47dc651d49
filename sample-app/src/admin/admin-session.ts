import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * The sample's browser session for its admin pages (the lock board): a cookie the browser sends by
 * itself, where a bearer token in an `Authorization` header cannot be sent by a page visit, a
 * `<script>` or a `<link>`. Stateless, so every instance of the app accepts it: the cookie is
 * `<expiry ms>.<HMAC-SHA256 of it, keyed with ADMIN_TOKEN>`. Use your app's own session in production.
 */
export const SESSION_COOKIE = 'admin_session';
export const SESSION_TTL_MS = 8 * 60 * 60 * 1000;

const mac = (secret: string, expiresAt: number) => createHmac('sha256', secret).update(`admin-session:${expiresAt}`).digest('base64url');

/** Equal strings, compared in constant time (no early exit that a timing attack could measure). */
export function sameSecret(given: string, expected: string): boolean {
  const a = createHmac('sha256', 'compare').update(given).digest();
  const b = createHmac('sha256', 'compare').update(expected).digest();
  return timingSafeEqual(a, b);
}

/** A session value that lasts `ttlMs` from `now`. */
export function signSession(secret: string, now: number, ttlMs = SESSION_TTL_MS): string {
  const expiresAt = now + ttlMs;
  return `${expiresAt}.${mac(secret, expiresAt)}`;
}

/** Whether `value` is a session this secret signed and that has not expired at `now`. */
export function verifySession(secret: string, value: string | undefined, now: number): boolean {
  const match = /^(\d{1,16})\.([A-Za-z0-9_-]{43})$/.exec(value ?? '');
  if (!match) return false;
  const expiresAt = Number(match[1]);
  return expiresAt > now && sameSecret(match[2], mac(secret, expiresAt));
}

/** The value of cookie `name` in a `Cookie` header, if any. */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const at = part.indexOf('=');
    if (at > 0 && part.slice(0, at).trim() === name) return part.slice(at + 1).trim();
  }
  return undefined;
}

/** `Set-Cookie` for a session: HttpOnly (no script reads it), SameSite=Strict (no other site sends it). */
export function sessionCookie(value: string, secure: boolean, maxAgeMs = SESSION_TTL_MS): string {
  return `${SESSION_COOKIE}=${value}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${Math.floor(maxAgeMs / 1000)}${secure ? '; Secure' : ''}`;
}
