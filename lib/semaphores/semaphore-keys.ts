import type { LockKeys } from '../redis/lock-keys';

/** The Redis keys of one semaphore: one hash tag, so they share a cluster slot. */
export class SemaphoreKeys {
  readonly base: string;
  readonly leases: string;
  readonly line: string;
  readonly deadlines: string;
  readonly fence: string;
  readonly channel: string;

  constructor(keys: LockKeys, name: string) {
    this.base = keys.semaphore(name);
    this.leases = `${this.base}:leases`;
    this.line = `${this.base}:line`;
    this.deadlines = `${this.base}:deadlines`;
    this.fence = `${this.base}:fence`;
    this.channel = `${this.base}:channel`;
  }

  releaseRecord(permitId: string, requestId: string): string {
    return `${this.base}:rq:${permitId}:${requestId}`;
  }
}
