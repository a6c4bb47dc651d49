import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FairLockService, LockModule, LockTimeoutError, ReadWriteLockService, SemaphoreService } from '../../lib';
import type { LockAdapter } from './adapter';

/** The other kinds of this library behind the adapter shape, for the cost workload (module defaults). */
export type OtherKind = 'fair' | 'read' | 'semaphore';

/** Permits of the semaphore case (redis-semaphore's `Semaphore` gets the same limit). */
export const COST_PERMITS = 3;

export async function createOtherKindAdapter(redisUrl: string, kind: OtherKind): Promise<LockAdapter> {
  @Module({ imports: [LockModule.forRoot({ redis: redisUrl })] })
  class BenchOtherKindModule {}

  const app = await NestFactory.createApplicationContext(BenchOtherKindModule, { logger: false });
  const run = (): LockAdapter['run'] => {
    switch (kind) {
      case 'fair': {
        const fair = app.get(FairLockService);
        return (key, fn) => fair.run(`bench:${key}`, fn);
      }
      case 'read': {
        const rw = app.get(ReadWriteLockService);
        return (key, fn) => rw.runRead(`bench:${key}`, fn);
      }
      case 'semaphore': {
        const semaphores = app.get(SemaphoreService);
        return (key, fn) => semaphores.run(`bench:${key}`, fn, { permits: COST_PERMITS });
      }
    }
  };
  return {
    run: run(),
    gaveUp: (error) => error instanceof LockTimeoutError,
    close: () => app.close(),
  };
}
