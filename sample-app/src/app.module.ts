import { Module } from '@nestjs/common';
import { LockModule } from '../../lib';
import { FencedStore } from './fencing/fenced-store';
import { OrdersController } from './orders/orders.controller';
import { OrdersService } from './orders/orders.service';
import { ProductsController } from './products/products.controller';
import { ProductsService } from './products/products.service';
import { appRedisProviders, REDIS_URL } from './redis/app-redis.provider';

@Module({
  imports: [LockModule.forRoot({ redis: REDIS_URL })],
  controllers: [ProductsController, OrdersController],
  providers: [ProductsService, OrdersService, FencedStore, ...appRedisProviders],
})
export class AppModule {}
