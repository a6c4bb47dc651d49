import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import * as library from '../../lib';
import type { LockAdapter } from './adapter';

type MethodDecoratorFactory = (key: string, options?: Record<string, unknown>) => MethodDecorator;

/** The decorator, when the library in this tree exports it (it is resolved at run time). */
export function distributedLockDecorator(): MethodDecoratorFactory | undefined {
  const candidate = (library as Record<string, unknown>).DistributedLock;
  return typeof candidate === 'function' ? (candidate as MethodDecoratorFactory) : undefined;
}

/**
 * This library through `@DistributedLock('bench:#key')` on a plain provider's method, with the
 * module's defaults: the key template, the bootstrap wrapping and the owner context all on the path.
 */
export async function createDecoratorAdapter(redisUrl: string): Promise<LockAdapter> {
  const DistributedLock = distributedLockDecorator();
  if (!DistributedLock) throw new Error('lib/index.ts does not export DistributedLock');

  class LockedWork {
    async locked<T>(key: string, fn: () => Promise<T>): Promise<T> {
      return fn();
    }
  }
  // Applied by hand (what `@DistributedLock(...)` compiles to) so this file builds before the decorator exists.
  const descriptor = Object.getOwnPropertyDescriptor(LockedWork.prototype, 'locked')!;
  const decorated = Reflect.decorate([DistributedLock('bench:#key')], LockedWork.prototype, 'locked', descriptor);
  Object.defineProperty(LockedWork.prototype, 'locked', (decorated as PropertyDescriptor | undefined) ?? descriptor);
  Reflect.decorate([Injectable()], LockedWork);

  @Module({ imports: [library.LockModule.forRoot({ redis: redisUrl })], providers: [LockedWork] })
  class BenchDecoratorModule {}

  const app = await NestFactory.createApplicationContext(BenchDecoratorModule, { logger: false });
  const work = app.get(LockedWork);
  return {
    // The run adapter locks `bench:<key>` too, so both paths lock the same names.
    run: (key, fn) => work.locked(key, fn),
    gaveUp: (error) => error instanceof library.LockTimeoutError,
    close: () => app.close(),
  };
}
