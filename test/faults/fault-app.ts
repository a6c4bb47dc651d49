import type { LoggerService } from '@nestjs/common';
import { Test, TestingModule } from '@nestjs/testing';
import { LockModule, LockModuleOptions } from '../../lib';

/** Log lines of one level, as the application's logger received them. */
export class CapturedLogs implements LoggerService {
  readonly warnings: string[] = [];
  readonly errors: string[] = [];
  log(): void {}
  debug(): void {}
  verbose(): void {}
  warn(message: unknown): void {
    this.warnings.push(String(message));
  }
  error(message: unknown): void {
    this.errors.push(String(message));
  }
}

/** A Nest application context with LockModule whose log lines the test can read. */
export async function createFaultApp(
  options: LockModuleOptions,
  providers: any[] = [],
): Promise<{ app: TestingModule; logs: CapturedLogs }> {
  const logs = new CapturedLogs();
  const app = await Test.createTestingModule({ imports: [LockModule.forRoot(options)], providers }).compile();
  app.useLogger(logs);
  await app.init();
  return { app, logs };
}

/** How long `work` took to settle, and how: the value or the error. */
export async function timed<T>(work: Promise<T>): Promise<{ ms: number; value?: T; error?: unknown }> {
  const started = Date.now();
  try {
    const value = await work;
    return { ms: Date.now() - started, value };
  } catch (error) {
    return { ms: Date.now() - started, error };
  }
}
