import { ReplyError } from 'ioredis';
import { Keyspace, StatusReply, type Reply } from './keyspace';
import { LuaRunner } from './lua-runner';

/** A connection as the server sees it: where pub/sub messages go. */
export interface Subscriber {
  deliver(event: 'message' | 'smessage', channel: string, message: string): void;
}

/** Notified when the server goes down or comes back (`setUnavailable`). */
export interface AvailabilityListener {
  availabilityChanged(available: boolean): void;
}

/**
 * One simulated Redis server: a keyspace, the script cache (the library's Lua run by fengari),
 * pub/sub and sharded pub/sub, and an "unreachable" switch. Commands run synchronously; the
 * connections make their answers asynchronous (microtasks only, never a timer, so fake timers
 * never stall a command).
 */
export class InMemoryRedis {
  readonly keyspace = new Keyspace();
  private lua: LuaRunner | undefined;
  private readonly channels = new Map<string, Set<Subscriber>>();
  private readonly shardChannels = new Map<string, Set<Subscriber>>();
  private readonly listeners = new Set<AvailabilityListener>();
  private up = true;

  get available(): boolean {
    return this.up;
  }

  setAvailable(available: boolean): void {
    if (this.up === available) return;
    this.up = available;
    for (const listener of [...this.listeners]) listener.availabilityChanged(available);
  }

  watch(listener: AvailabilityListener): void {
    this.listeners.add(listener);
  }

  unwatch(listener: AvailabilityListener): void {
    this.listeners.delete(listener);
  }

  /** Runs one command (as a client sent it, or as a script calls it). */
  execute(name: string, args: readonly string[]): Reply {
    const command = name.toLowerCase();
    switch (command) {
      case 'evalsha':
      case 'eval': {
        const numKeys = Number(args[1]);
        if (!Number.isInteger(numKeys) || numKeys < 0 || numKeys > args.length - 2) {
          throw new ReplyError('ERR Number of keys can\'t be greater than number of args');
        }
        const keys = args.slice(2, 2 + numKeys);
        const argv = args.slice(2 + numKeys);
        // One clock for the whole script, as Redis freezes time while a script runs.
        const now = Date.now();
        const call = (inner: string, innerArgs: string[]): Reply => this.scriptCommand(inner, innerArgs, now);
        this.lua ??= new LuaRunner();
        return command === 'eval' ? this.lua.eval(args[0], keys, argv, call) : this.lua.evalsha(args[0], keys, argv, call);
      }
      case 'script': {
        const sub = args[0]?.toLowerCase();
        if (sub === 'flush') {
          // A new interpreter: every script must be sent again (NOSCRIPT), as after SCRIPT FLUSH.
          this.lua = undefined;
          return new StatusReply('OK');
        }
        if (sub === 'load') {
          if (args.length !== 2) throw new ReplyError("ERR wrong number of arguments for 'script|load' command");
          this.lua ??= new LuaRunner();
          return this.lua.load(args[1]);
        }
        throw new ReplyError(`ERR unknown subcommand '${args[0]}'`);
      }
      default:
        return this.scriptCommand(command, args, Date.now());
    }
  }

  subscribe(subscriber: Subscriber, channel: string, sharded: boolean): void {
    const map = sharded ? this.shardChannels : this.channels;
    let set = map.get(channel);
    if (!set) map.set(channel, (set = new Set()));
    set.add(subscriber);
  }

  unsubscribe(subscriber: Subscriber, channel: string, sharded: boolean): void {
    const map = sharded ? this.shardChannels : this.channels;
    const set = map.get(channel);
    if (!set) return;
    set.delete(subscriber);
    if (set.size === 0) map.delete(channel);
  }

  private scriptCommand(name: string, args: readonly string[], now: number): Reply {
    const command = name.toLowerCase();
    if (command === 'publish' || command === 'spublish') {
      if (args.length < 2) throw new ReplyError(`ERR wrong number of arguments for '${command}' command`);
      return this.publish(args[0], args[1], command === 'spublish');
    }
    return this.keyspace.execute(command, args, now);
  }

  private publish(channel: string, message: string, sharded: boolean): number {
    const subscribers = (sharded ? this.shardChannels : this.channels).get(channel);
    if (!subscribers) return 0;
    for (const subscriber of subscribers) subscriber.deliver(sharded ? 'smessage' : 'message', channel, message);
    return subscribers.size;
  }
}

export { StatusReply };
