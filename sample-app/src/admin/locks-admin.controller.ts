import { BadRequestException, Controller, Get, Param, Query, UseGuards } from '@nestjs/common';
import { LockInfo, LockService } from '../../../lib';
import { LocalAdminGuard } from './local-admin.guard';

/** At most this many records per answer, and this long spent looking: the endpoint's own bounds. */
const MAX_RESULTS = 100;
const MAX_LIST_MS = 2_000;

/** `GET /admin/locks?match=stock:*` and `GET /admin/locks/:name`: who holds what, behind the admin guard. */
@Controller('admin/locks')
@UseGuards(LocalAdminGuard)
export class LocksAdminController {
  constructor(private readonly locks: LockService) {}

  /**
   * The query value is a request value: one string only (`?match=a&match=b` is an array), and a
   * pattern `list` refuses (too many wildcards, `[z-a]`) is the client's mistake, answered 400.
   */
  @Get()
  async list(@Query('match') match?: unknown): Promise<LockInfo[]> {
    if (match !== undefined && typeof match !== 'string') throw new BadRequestException('match must be one glob string');
    const found: LockInfo[] = [];
    const deadline = Date.now() + MAX_LIST_MS;
    try {
      for await (const info of this.locks.list({ match })) {
        if (found.push(info) >= MAX_RESULTS || Date.now() > deadline) break;
      }
    } catch (error) {
      if (error instanceof TypeError) throw new BadRequestException(error.message);
      throw error;
    }
    return found;
  }

  @Get(':name')
  inspect(@Param('name') name: string): Promise<LockInfo> {
    return this.locks.inspect(name);
  }
}
