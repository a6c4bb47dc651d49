import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { LockModule, LockService, LockTimeoutError } from '../../lib';
import type { LockAdapter } from './adapter';

/**
 * This library through `LockService.run`, with the module's defaults (watchdog, 5 s wait);
 * `layout: 'redisson'` for the row that measures Java Redisson's key layout (docs/redisson-interop.md).
 */
export async function createLockServiceAdapter(redisUrl: string, layout: 'native' | 'redisson' = 'native'): Promise<LockAdapter> {
  @Module({ imports: [LockModule.forRoot({ redis: redisUrl, layout })] })
  class BenchLockServiceModule {}

  const app = await NestFactory.createApplicationContext(BenchLockServiceModule, { logger: false });
  const locks = app.get(LockService);
  return {
    // The decorator adapter locks `bench:#key`: both paths lock the same names.
    run: (key, fn) => locks.run(`bench:${key}`, fn),
    gaveUp: (error) => error instanceof LockTimeoutError,
    close: () => app.close(),
  };
}
