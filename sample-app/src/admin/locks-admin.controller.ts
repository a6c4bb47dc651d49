import { Controller, Get, Param, Query } from '@nestjs/common';
import { LockInfo, LockService } from '../../../lib';

/** `GET /admin/locks?match=stock:*` and `GET /admin/locks/:name`: who holds what (put it behind your admin guard). */
@Controller('admin/locks')
export class LocksAdminController {
  constructor(private readonly locks: LockService) {}

  @Get()
  async list(@Query('match') match?: string): Promise<LockInfo[]> {
    const found: LockInfo[] = [];
    for await (const info of this.locks.list({ match })) if (found.push(info) >= 100) break;
    return found;
  }

  @Get(':name')
  inspect(@Param('name') name: string): Promise<LockInfo> {
    return this.locks.inspect(name);
  }
}
