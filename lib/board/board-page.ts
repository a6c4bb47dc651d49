import { applyDecorators, Header } from '@nestjs/common';
import { BOARD_ASSETS } from './board-assets.generated';

/**
 * What every board response says about itself: only its own script and stylesheet may run or
 * apply (a strict CSP: no inline script, nothing from elsewhere), it is never framed or cached,
 * and its content type is not guessed.
 */
export const BOARD_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

export function BoardResponse(contentType: string): MethodDecorator {
  return applyDecorators(
    Header('Content-Type', contentType),
    Header('Content-Security-Policy', BOARD_CSP),
    Header('X-Content-Type-Options', 'nosniff'),
    Header('X-Frame-Options', 'DENY'),
    Header('Referrer-Policy', 'no-referrer'),
    Header('Cache-Control', 'no-store'),
  );
}

const SAFE_SEGMENT = /^[A-Za-z0-9._~%-]+$/;

/**
 * The page, its asset URLs relative to the URL the browser asked for, so the board works under any
 * global prefix and behind a proxy that keeps its last path segment: from `.../lock-board` the
 * assets are `lock-board/board.js`, from `.../lock-board/` they are `board.js`.
 */
export function boardPage(requestUrl: string, boardPath: string): string {
  const path = requestUrl.split('?')[0].split('#')[0];
  let base = '';
  if (!path.endsWith('/')) {
    const asked = path.slice(path.lastIndexOf('/') + 1);
    base = `${SAFE_SEGMENT.test(asked) ? asked : boardPath.slice(boardPath.lastIndexOf('/') + 1)}/`;
  }
  return BOARD_ASSETS.html.replace(/\{\{base\}\}/g, base);
}

export const boardScript = (): string => BOARD_ASSETS.js;
export const boardStylesheet = (): string => BOARD_ASSETS.css;
