import {
  BadRequestException,
  Body,
  ConflictException,
  Controller,
  ForbiddenException,
  Get,
  HttpCode,
  Inject,
  NotFoundException,
  Post,
  Query,
  Req,
  UseGuards,
  type Type,
} from '@nestjs/common';
import { BoardForceRelease, parseForceRelease } from './board-force-release';
import { boardPage, BoardResponse, boardScript, boardStylesheet } from './board-page';
import { BoardSnapshots, type BoardSnapshot } from './board-snapshots';
import { LockBoardGuard } from './lock-board.guard';
import { BOARD_CROSS_SITE, BOARD_CROSS_SITE_READ, BOARD_FORCE_RELEASE_OFF, BOARD_NOT_AS_SHOWN, BOARD_READ_HOLD } from './lock-board.messages';
import type { ResolvedLockBoardOptions } from './lock-board.options';
import { BOARD_PATH, RESOLVED_BOARD_OPTIONS } from './lock-board.tokens';

/** The request as both Express and Fastify give it (only what the board reads). */
interface BoardRequest {
  readonly originalUrl?: string;
  readonly url?: string;
  readonly headers: Record<string, string | string[] | undefined>;
}

const header = (request: BoardRequest, name: string): string | undefined => {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
};

/**
 * Whether the request comes from another site. A browser that sends `Sec-Fetch-Site` (every
 * current one) is believed alone: `same-origin`, or `none` (typed in, a bookmark), passes; anything
 * else (`same-site`, `cross-site`) is another site. Only when it is absent (an older browser) is an
 * `Origin` compared, with the `Host` header the request arrived with: never with `X-Forwarded-Host`,
 * which another site's script may set itself (after a preflight an app-wide CORS config answers).
 * So an older browser behind a proxy that rewrites `Host` is refused: it fails closed. A tool such
 * as curl sends neither header and is not refused (the guard decides about it).
 */
export function isCrossSite(request: BoardRequest): boolean {
  const site = header(request, 'sec-fetch-site');
  if (site !== undefined) return site !== 'same-origin' && site !== 'none';
  const origin = header(request, 'origin');
  if (origin === undefined) return false;
  const host = (header(request, 'host') ?? '').trim().toLowerCase();
  try {
    return host === '' || new URL(origin).host.toLowerCase() !== host;
  } catch {
    return true;
  }
}

/**
 * Whether a force release comes from the board's own page: it carries the custom header (a
 * cross-site form or simple request cannot set one, and setting it cross-origin needs a preflight
 * the board never answers), JSON, and nothing says another site.
 */
export function isSameOriginBoardRequest(request: BoardRequest): boolean {
  if (header(request, 'x-lock-board') !== '1') return false;
  if (!(header(request, 'content-type') ?? '').toLowerCase().startsWith('application/json')) return false;
  return !isCrossSite(request);
}

/**
 * The board's script and stylesheet at `path`: the package's own files, the same for every visitor
 * and carrying no lock data, so the board's guard does not run on them (a browser loads them with
 * `<script>` and `<link>`, which carry no `Authorization` header). The page and its data API stay
 * behind the guard. The app's global guards still apply, as to any controller.
 */
export function boardAssetsControllerAt(path: string): Type<unknown> {
  @Controller(path)
  class LockBoardAssetsController {
    @Get('board.js')
    @BoardResponse('text/javascript; charset=utf-8')
    script(): string {
      return boardScript();
    }

    @Get('board.css')
    @BoardResponse('text/css; charset=utf-8')
    stylesheet(): string {
      return boardStylesheet();
    }
  }
  return LockBoardAssetsController;
}

/**
 * The board's page and data API at `path` (docs/lock-board.md), behind its guard: a Nest controller,
 * so the app's global prefix, guards and interceptors apply, on Express and Fastify alike. Made per
 * path, because a controller's route is fixed when its class is defined.
 */
export function boardControllerAt(path: string): Type<unknown> {
  @Controller(path)
  @UseGuards(LockBoardGuard)
  class LockBoardController {
    constructor(
      @Inject(BoardSnapshots) private readonly snapshots: BoardSnapshots,
      @Inject(BoardForceRelease) private readonly releases: BoardForceRelease,
      @Inject(RESOLVED_BOARD_OPTIONS) private readonly options: ResolvedLockBoardOptions,
      @Inject(BOARD_PATH) private readonly boardPath: string,
    ) {}

    @Get()
    @BoardResponse('text/html; charset=utf-8')
    page(@Req() request: BoardRequest): string {
      return boardPage(request.originalUrl ?? request.url ?? '', this.boardPath);
    }

    @Get('api/snapshot')
    @BoardResponse('application/json; charset=utf-8')
    async snapshot(@Query('match') match: unknown, @Req() request: BoardRequest): Promise<BoardSnapshot> {
      // Lock names and holders are not for another site's scripts, even where the app allows CORS.
      if (isCrossSite(request)) throw new ForbiddenException(BOARD_CROSS_SITE_READ);
      if (match !== undefined && typeof match !== 'string') throw new BadRequestException('match must be one name pattern');
      try {
        this.snapshots.parseMatch(match);
      } catch (error) {
        throw new BadRequestException(error instanceof Error ? error.message : String(error));
      }
      return this.snapshots.snapshot(match);
    }

    @Post('api/force-release')
    @HttpCode(200)
    @BoardResponse('application/json; charset=utf-8')
    async forceRelease(@Body() body: unknown, @Req() request: BoardRequest): Promise<{ released: true }> {
      if (!this.options.allowForceRelease) throw new NotFoundException(BOARD_FORCE_RELEASE_OFF);
      if (!isSameOriginBoardRequest(request)) throw new ForbiddenException(BOARD_CROSS_SITE);
      let asked;
      try {
        asked = parseForceRelease(body);
      } catch (error) {
        throw new BadRequestException(error instanceof Error ? error.message : String(error));
      }
      // Who asks is worked out first (an `actor` that fails is a 500 before Redis is asked); the
      // library's own errors (a name it cannot use: 400, Redis down: 503) reach the app's filters.
      const outcome = await this.releases.release(asked, request);
      if (!outcome.released) {
        if (outcome.readHeld) throw new BadRequestException(BOARD_READ_HOLD);
        throw new ConflictException({ statusCode: 409, released: false, message: BOARD_NOT_AS_SHOWN(asked.name, outcome.why) });
      }
      return { released: true };
    }
  }
  return LockBoardController;
}
