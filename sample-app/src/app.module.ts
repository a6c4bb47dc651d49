import { Module } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { TerminusModule } from '@nestjs/terminus';
import { LockModule } from '../../lib';
import { LockHealthIndicator } from '../../lib/terminus';
import { LockBoardModule } from '../../lib/board';
import { AdminSessionController } from './admin/admin-session.controller';
import { LocalAdminGuard } from './admin/local-admin.guard';
import { LocksAdminController } from './admin/locks-admin.controller';
import { HealthController } from './health/health.controller';
import { FencedStore } from './fencing/fenced-store';
import { InventoryReportJob } from './jobs/inventory-report.job';
import { OrdersController } from './orders/orders.controller';
import { OrdersService } from './orders/orders.service';
import { ProductsController } from './products/products.controller';
import { ProductsService } from './products/products.service';
import { appRedisProviders, REDIS_URL } from './redis/app-redis.provider';

@Module({
  imports: [
    LockModule.forRoot({ redis: REDIS_URL }),
    // The lock board at /lock-board: who holds what, who waits, contention (docs/lock-board.md). With
    // ADMIN_TOKEN set, a browser signs in at /admin/login (a session cookie); tools send the bearer token.
    LockBoardModule.forRoot({ guard: LocalAdminGuard, allowForceRelease: process.env.BOARD_FORCE_RELEASE === '1' }),
    ScheduleModule.forRoot(),
    TerminusModule.forRoot({ logger: false }),
  ],
  controllers: [ProductsController, OrdersController, HealthController, LocksAdminController, AdminSessionController],
  providers: [ProductsService, OrdersService, InventoryReportJob, FencedStore, LockHealthIndicator, ...appRedisProviders],
})
export class AppModule {}
