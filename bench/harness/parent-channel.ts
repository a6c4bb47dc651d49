import { Message } from './messages';

/**
 * The worker side of the IPC channel: messages from the parent are queued per type until asked for,
 * so a message that arrives before `next(type)` is not lost.
 */
export class ParentChannel {
  private readonly queued = new Map<string, Message[]>();
  private readonly waiting = new Map<string, Array<(message: Message) => void>>();

  constructor() {
    process.on('message', (message: Message) => {
      const waiters = this.waiting.get(message.type);
      const waiter = waiters?.shift();
      if (waiter) waiter(message);
      else {
        const queue = this.queued.get(message.type) ?? [];
        queue.push(message);
        this.queued.set(message.type, queue);
      }
    });
  }

  send(message: Message): void {
    process.send?.(message);
  }

  next(type: string): Promise<Message> {
    const queued = this.queued.get(type)?.shift();
    if (queued) return Promise.resolve(queued);
    return new Promise((resolve) => {
      const waiters = this.waiting.get(type) ?? [];
      waiters.push(resolve);
      this.waiting.set(type, waiters);
    });
  }

  /** Lets the process exit while the channel is open but idle. */
  release(): void {
    process.channel?.unref();
  }
}
