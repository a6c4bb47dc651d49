import { Injectable } from '@nestjs/common';
import { Observable, of } from 'rxjs';
import { DistributedLock, DistributedSemaphore, FairLock, ReadLock, WriteLock } from '../lib';
import { lockedMethodOf } from '../lib/decorators/distributed-lock.decorator';

/**
 * A locked method returns a Promise (it waits for its lock), so the decorators' types refuse any
 * other declared return type at compile time, as bootstrap does at run time (issue 43, point 11).
 * `npm run typecheck` compiles this file: a `@ts-expect-error` that no longer meets an error fails it
 * (TS2578), so each one below proves a refusal; the accepted methods prove what still compiles.
 */
@Injectable()
class Refused {
  // @ts-expect-error TS1241: a string
  @DistributedLock('a:#id') sync(id: string): string {
    return id;
  }
  // @ts-expect-error TS1241: void
  @FairLock('b') fire(): void {}
  // @ts-expect-error TS1241: an Observable, whose work would run after the lock is gone
  @ReadLock('c') stream(): Observable<number> {
    return of(1);
  }
  // @ts-expect-error TS1241: a number
  @WriteLock('d') count(): number {
    return 1;
  }
  // @ts-expect-error TS1241: a semaphore's method too
  @DistributedSemaphore('e', { permits: 1 }) take(): string {
    return '';
  }
}

@Injectable()
class Accepted {
  @DistributedLock('a:#id') async pay(id: string): Promise<string> {
    return id;
  }
  @WriteLock('b') write(): Promise<void> {
    return Promise.resolve();
  }
  // Untyped code (`any`) is left to bootstrap, which reads the emitted return type.
  @DistributedSemaphore('c:#0', { permits: 2 }) legacy(tenant: string): any {
    return Promise.resolve(tenant);
  }
}

it('the decorators wrap what their types accept (the refusals are compile-time: npm run typecheck)', () => {
  for (const method of [Accepted.prototype.pay, Accepted.prototype.write, Accepted.prototype.legacy]) expect(lockedMethodOf(method)).toBeDefined();
  // JavaScript callers, and code that silences the compiler, still get the bootstrap refusal.
  expect(lockedMethodOf(Refused.prototype.sync)?.problem?.message).toContain('Refused.sync: the method is declared to return String');
});
