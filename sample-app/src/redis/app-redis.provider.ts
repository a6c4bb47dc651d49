import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import Redis from 'ioredis';

export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** The app's own Redis connection for its data (stock, orders), shared by every instance. */
export const APP_REDIS = Symbol('APP_REDIS');

/** Injects the app's Redis connection. */
export const InjectAppRedis = () => Inject(APP_REDIS);

@Injectable()
export class AppRedisCloser implements OnApplicationShutdown {
  constructor(@InjectAppRedis() private readonly redis: Redis) {}

  async onApplicationShutdown(): Promise<void> {
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}

export const appRedisProviders = [
  { provide: APP_REDIS, useFactory: () => new Redis(REDIS_URL, { lazyConnect: true }) },
  AppRedisCloser,
];
