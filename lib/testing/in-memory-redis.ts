import { ReplyError } from 'ioredis';
import { Keyspace } from './keyspace/keyspace';
import { StatusReply, type Reply } from './keyspace/replies';
import { LuaRunner } from './lua-runner';
import { monotonicNow } from '../monotonic-clock';

/** A connection as the server sees it: where pub/sub messages go. */
export interface Subscriber {
  deliver(event: 'message' | 'smessage', channel: string, message: string): void;
  /** Connected now: a real server drops a closed connection's subscriptions (PUBSUB NUMSUB stops counting it). */
  readonly connected: boolean;
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
  /**
   * The server's clock: wall-clock time as of the server's start, moved on by the monotonic clock
   * (whole ms, as Redis counts). So fake timers move it (and expire keys), while a wall-clock step
   * (`Date.now` mocked to jump) neither expires a lease nor stretches one, as with a real server
   * whose clock the client's step does not touch.
   */
  private readonly epochOffset = Date.now() - monotonicNow();
  private lua: LuaRunner | undefined;
  private readonly channels = new Map<string, Set<Subscriber>>();
  private readonly shardChannels = new Map<string, Set<Subscriber>>();
  private readonly listeners = new Set<AvailabilityListener>();
  private up = true;
  /**
   * Replicas that confirm writes (`WAIT`): none unless a test says so
   * (`LockTestingModule.forRoot({ replicas })`, `LockTestingControls.setReplicas`), so `syncReplicas`
   * fails in the kit as it does against a server without replicas.
   */
  replicas = 0;

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
        const now = this.now();
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
      case 'wait': {
        // WAIT numreplicas timeout: as many as asked, up to the replicas this server has. Answered at
        // once (a real server with too few would first wait out the timeout: same outcome).
        if (args.length !== 2) throw new ReplyError("ERR wrong number of arguments for 'wait' command");
        const asked = Number(args[0]);
        const timeout = Number(args[1]);
        if (!Number.isInteger(asked) || !Number.isInteger(timeout)) throw new ReplyError('ERR value is not an integer or out of range');
        if (timeout < 0) throw new ReplyError('ERR timeout is negative');
        return Math.min(asked, this.replicas);
      }
      default:
        return this.scriptCommand(command, args, this.now());
    }
  }

  /** Now on the server's clock, in ms since the epoch. */
  now(): number {
    return Math.floor(monotonicNow() + this.epochOffset);
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
    if (command === 'pubsub') return this.pubsub(args);
    return this.keyspace.execute(command, args, now);
  }

  /** PUBSUB NUMSUB / SHARDNUMSUB: each channel and how many connected subscribers hear it. */
  private pubsub(args: readonly string[]): Reply {
    const sub = args[0]?.toLowerCase();
    if (sub !== 'numsub' && sub !== 'shardnumsub') throw new ReplyError(`ERR unknown subcommand '${args[0] ?? ''}'`);
    const map = sub === 'shardnumsub' ? this.shardChannels : this.channels;
    const counts: Array<string | number> = [];
    for (const channel of args.slice(1)) {
      let count = 0;
      for (const subscriber of map.get(channel) ?? []) if (subscriber.connected) count += 1;
      counts.push(channel, count);
    }
    return counts;
  }

  private publish(channel: string, message: string, sharded: boolean): number {
    const subscribers = (sharded ? this.shardChannels : this.channels).get(channel);
    if (!subscribers) return 0;
    for (const subscriber of subscribers) subscriber.deliver(sharded ? 'smessage' : 'message', channel, message);
    return subscribers.size;
  }
}

export { StatusReply };
