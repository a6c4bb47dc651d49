import { EventEmitter } from 'node:events';
import { KEYSPACE_COMMANDS } from './keyspace/keyspace';
import { StatusReply, type Reply } from './keyspace/replies';
import type { AvailabilityListener, InMemoryRedis, Subscriber } from './in-memory-redis';

/** What ioredis says when a command meets a connection that is closed or between reconnects. */
const CONNECTION_CLOSED = 'Connection is closed.';

type Arg = string | number | Buffer | readonly Arg[];

function flatten(args: readonly Arg[], into: string[] = []): string[] {
  for (const arg of args) {
    if (Array.isArray(arg)) flatten(arg as readonly Arg[], into);
    // A Buffer one char per byte (latin1): raw bytes (Redisson's permit ids) stay distinct, where
    // a UTF-8 reading would turn every byte above 0x7f into the same U+FFFD.
    else into.push(typeof arg === 'string' ? arg : Buffer.isBuffer(arg) ? arg.toString('latin1') : arg.toString());
  }
  return into;
}

/** A reply as ioredis hands it to the caller (statuses as strings, HGETALL as an object). */
function forClient(name: string, reply: Reply): unknown {
  if (reply instanceof StatusReply) return reply.text;
  if (name === 'hgetall' && Array.isArray(reply)) {
    const object: Record<string, string> = {};
    for (let i = 0; i + 1 < reply.length; i += 2) object[String(reply[i])] = String(reply[i + 1]);
    return object;
  }
  if (Array.isArray(reply)) return reply.map((item) => forClient('', item));
  return reply;
}

/** Commands a stand-in connection (and its pipelines) offers as methods, ioredis style. */
const COMMAND_METHODS = [...KEYSPACE_COMMANDS, 'evalsha', 'eval', 'script', 'wait', 'publish', 'spublish'];

/**
 * A connection to an `InMemoryRedis`, shaped like the part of an ioredis client the library uses:
 * `status` and the `ready`/`close`/`end` events, commands as methods (promises), `pipeline()` and
 * `multi()`, `duplicate()`, (s)subscribe with `message`/`smessage` events, `quit`/`disconnect`.
 * Answers come back as microtasks (no timer, no socket: nothing keeps the process alive). While
 * the server is unavailable the connection is `reconnecting` and every command fails as a closed
 * ioredis connection does.
 */
export class StandInConnection extends EventEmitter implements Subscriber, AvailabilityListener {
  status = 'wait';
  readonly options: Record<string, unknown>;
  private readonly subscriptions = new Set<string>();
  private readonly shardSubscriptions = new Set<string>();

  constructor(
    readonly server: InMemoryRedis,
    options: Record<string, unknown> = {},
  ) {
    super();
    this.options = { host: 'in-memory', port: 0, ...options };
    server.watch(this);
  }

  /** A stand-in for `Redis.duplicate()`: another connection to the same server. */
  duplicate(_override?: unknown, options?: Record<string, unknown>): StandInConnection {
    return new StandInConnection(this.server, { ...this.options, ...(options ?? (_override as Record<string, unknown>) ?? {}) });
  }

  connect(): Promise<void> {
    if (this.status !== 'wait' && this.status !== 'end') return Promise.resolve();
    this.status = 'connecting';
    this.server.watch(this);
    return Promise.resolve().then(() => {
      if (this.status !== 'connecting') return;
      if (this.server.available) this.becomeReady();
      else this.status = 'reconnecting';
    });
  }

  availabilityChanged(available: boolean): void {
    if (this.status === 'wait' || this.status === 'end') return;
    if (available) {
      if (this.status !== 'ready') this.becomeReady();
      return;
    }
    if (this.status === 'connecting') {
      this.status = 'reconnecting';
      return;
    }
    this.status = 'reconnecting';
    this.emit('close');
    this.emit('reconnecting', 0);
  }

  /** Runs `name` with `args` once the current tick's code has run, as a round trip would. */
  command(name: string, args: readonly Arg[]): Promise<unknown> {
    if (this.status === 'end') return Promise.reject(new Error(CONNECTION_CLOSED));
    if (this.status === 'wait') void this.connect();
    const words = flatten(args);
    return Promise.resolve().then(() => {
      this.checkUsable();
      return forClient(name, this.server.execute(name, words));
    });
  }

  /** `call(name, ...args)`, ioredis's generic form. */
  call(name: string, ...args: Arg[]): Promise<unknown> {
    return this.command(name.toLowerCase(), args);
  }

  info(section?: string): Promise<unknown> {
    return this.command('info', section === undefined ? [] : [section]);
  }

  pipeline(): Batch {
    return new Batch(this).proxy;
  }

  multi(): Batch {
    return new Batch(this).proxy;
  }

  subscribe(...channels: string[]): Promise<number> {
    return this.changeSubscriptions(channels, false, true);
  }

  ssubscribe(...channels: string[]): Promise<number> {
    return this.changeSubscriptions(channels, true, true);
  }

  unsubscribe(...channels: string[]): Promise<number> {
    return this.changeSubscriptions(channels, false, false);
  }

  sunsubscribe(...channels: string[]): Promise<number> {
    return this.changeSubscriptions(channels, true, false);
  }

  /** Its subscriptions count (PUBSUB NUMSUB) only while it is connected, as a real socket's. */
  get connected(): boolean {
    return this.status === 'ready';
  }

  deliver(event: 'message' | 'smessage', channel: string, message: string): void {
    // A message published while this connection is down never reaches it, as with a real socket.
    if (this.status !== 'ready') return;
    void Promise.resolve().then(() => {
      const subscribed = event === 'smessage' ? this.shardSubscriptions : this.subscriptions;
      if (this.status === 'ready' && subscribed.has(channel)) this.emit(event, channel, message);
    });
  }

  quit(): Promise<string> {
    this.end();
    return Promise.resolve('OK');
  }

  disconnect(): void {
    this.end();
  }

  /** Executes a batch of commands at once (pipeline or MULTI: nothing else runs in between here). */
  runBatch(commands: ReadonlyArray<readonly [string, readonly Arg[]]>): Promise<Array<[Error | null, unknown]>> {
    if (this.status === 'end') return Promise.reject(new Error(CONNECTION_CLOSED));
    if (this.status === 'wait') void this.connect();
    return Promise.resolve().then(() => {
      this.checkUsable();
      return commands.map(([name, args]): [Error | null, unknown] => {
        try {
          return [null, forClient(name, this.server.execute(name, flatten(args)))];
        } catch (error) {
          return [error as Error, undefined];
        }
      });
    });
  }

  private checkUsable(): void {
    if (this.status === 'end' || !this.server.available) throw new Error(CONNECTION_CLOSED);
  }

  private changeSubscriptions(channels: string[], sharded: boolean, on: boolean): Promise<number> {
    if (this.status === 'end') return Promise.reject(new Error(CONNECTION_CLOSED));
    if (this.status === 'wait') void this.connect();
    return Promise.resolve().then(() => {
      this.checkUsable();
      const mine = sharded ? this.shardSubscriptions : this.subscriptions;
      for (const channel of channels) {
        if (on) {
          mine.add(channel);
          this.server.subscribe(this, channel, sharded);
        } else {
          mine.delete(channel);
          this.server.unsubscribe(this, channel, sharded);
        }
      }
      return this.subscriptions.size + this.shardSubscriptions.size;
    });
  }

  private becomeReady(): void {
    this.status = 'ready';
    this.emit('connect');
    this.emit('ready');
  }

  private end(): void {
    if (this.status === 'end') return;
    const wasOpen = this.status !== 'wait';
    this.status = 'end';
    for (const channel of this.subscriptions) this.server.unsubscribe(this, channel, false);
    for (const channel of this.shardSubscriptions) this.server.unsubscribe(this, channel, true);
    this.subscriptions.clear();
    this.shardSubscriptions.clear();
    this.server.unwatch(this);
    if (wasOpen) this.emit('close');
    this.emit('end');
  }
}

for (const name of COMMAND_METHODS) {
  Object.defineProperty(StandInConnection.prototype, name, {
    value: function (this: StandInConnection, ...args: Arg[]) {
      return this.command(name, args);
    },
    writable: true,
    configurable: true,
  });
}

/**
 * A pipeline or MULTI: commands are queued by method name (any command, chained as in ioredis) and
 * `exec()` answers `[error, reply]` per command.
 */
class Batch {
  readonly proxy: Batch;
  private readonly queued: Array<readonly [string, readonly Arg[]]> = [];

  constructor(private readonly connection: StandInConnection) {
    this.proxy = new Proxy(this, {
      get: (target, property, receiver) => {
        if (typeof property !== 'string' || property in target) return Reflect.get(target, property, receiver) as unknown;
        return (...args: Arg[]) => {
          target.queued.push([property.toLowerCase(), args]);
          return target.proxy;
        };
      },
    });
  }

  get length(): number {
    return this.queued.length;
  }

  exec(): Promise<Array<[Error | null, unknown]>> {
    return this.connection.runBatch(this.queued);
  }
}
