/**
 * The lock board bench's holder (workloads/board-cost.ts): a process of its own with a LockModule
 * that takes the locks the board then shows, so the board's process (whose CPU, event loop and heap
 * the bench measures) holds none of them. Started with `fork`; messages over IPC:
 * `{ hold: [from, to] }` takes `order:<from>` .. `order:<to - 1>` for an hour each and answers
 * `{ held: count }`; `{ close: true }` releases them, closes the module and exits.
 */
import 'reflect-metadata';
import { Module, type INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { LockModule, LockService } from '../../lib';

export const HOLDER_CONNECTION = 'bench-holder';
/** Instance heartbeats (a third of this) well apart from the measured windows. */
export const HOLDER_WATCHDOG_MS = 300_000;
const HOLD_MS = 3_600_000;
const CONCURRENCY = 128;

export type HolderRequest = { hold: [number, number] } | { close: true };
export type HolderReply = { held: number } | { failed: string };

async function hold(locks: LockService, from: number, to: number): Promise<void> {
  let next = from;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < to) {
        const name = `order:${next++}`;
        if (!(await locks.getLock(name).tryLock({ leaseTime: HOLD_MS }))) throw new Error(`board bench holder: ${name} was not free`);
      }
    }),
  );
}

async function main(): Promise<void> {
  const port = Number(process.env.BOARD_HOLDER_PORT);
  @Module({ imports: [LockModule.forRoot({ redis: { host: '127.0.0.1', port, connectionName: HOLDER_CONNECTION }, watchdogTimeout: HOLDER_WATCHDOG_MS })] })
  class BoardBenchHolderModule {}
  const app: INestApplicationContext = await NestFactory.createApplicationContext(BoardBenchHolderModule, { logger: false });
  const locks = app.get(LockService);
  let held = 0;
  process.on('message', (request: HolderRequest) => {
    if ('close' in request) {
      void app.close().finally(() => process.exit(0));
      return;
    }
    const [from, to] = request.hold;
    hold(locks, from, to).then(
      () => {
        held += to - from;
        process.send!({ held } satisfies HolderReply);
      },
      (error: unknown) => process.send!({ failed: error instanceof Error ? error.message : String(error) } satisfies HolderReply),
    );
  });
  // The bench went away (it kills this process too, normally): nothing to release on a server it stops.
  process.on('disconnect', () => process.exit(0));
  process.send!({ held } satisfies HolderReply);
}

if (require.main === module) {
  main().catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  });
}
