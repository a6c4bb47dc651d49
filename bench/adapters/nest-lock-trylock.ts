import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { LockModule, LockService, LockTimeoutError } from '../../lib';
import type { LockAdapter } from './adapter';
import { WAIT_MS } from './adapter';

/**
 * This library through `getLock(name)`, `tryLock({ waitTime })` and an awaited `unlock()` in
 * `finally`: the pair that `run` wraps, with its two round trips (`run` does not wait for the release).
 */
export async function createLockTryLockAdapter(redisUrl: string): Promise<LockAdapter> {
  @Module({ imports: [LockModule.forRoot({ redis: redisUrl })] })
  class BenchLockTryLockModule {}

  const app = await NestFactory.createApplicationContext(BenchLockTryLockModule, { logger: false });
  const locks = app.get(LockService);
  return {
    run: async (key, fn) => {
      const lock = locks.getLock(`bench:${key}`);
      if (!(await lock.tryLock({ waitTime: WAIT_MS }))) throw new LockTimeoutError(lock.name, WAIT_MS);
      try {
        return await fn();
      } finally {
        await lock.unlock();
      }
    },
    gaveUp: (error) => error instanceof LockTimeoutError,
    close: () => app.close(),
  };
}
