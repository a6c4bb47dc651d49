import { randomUUID } from 'node:crypto';

/**
 * Owner identity, the Node.js answer to Redisson's "client UUID + thread id": each module instance
 * has a client id, each owner is `clientId:n`. Request ids only need to be unique per owner, so a
 * counter does: no random token per call.
 */
export class OwnerIds {
  readonly clientId = randomUUID();
  private ownerSeq = 0;
  private requestSeq = 0;

  nextOwner(): string {
    return `${this.clientId}:${++this.ownerSeq}`;
  }

  nextRequest(): string {
    return (++this.requestSeq).toString(36);
  }
}
