import Redis from 'ioredis';
import { freePortPair, type RedisProcess, removeScratch, scratchDir, spawnRedis } from './redis-process';

/**
 * A redis-server for fault tests: frozen and resumed (SIGSTOP/SIGCONT), killed (SIGKILL, like a
 * crash) and started again, empty, on the same port, so clients that keep reconnecting to the same
 * address find it back.
 */
export class RestartableRedis {
  private constructor(
    readonly port: number,
    private readonly dir: string,
    private server: RedisProcess,
  ) {}

  static async start(): Promise<RestartableRedis> {
    const port = await freePortPair();
    const dir = scratchDir('restartable-redis');
    return new RestartableRedis(port, dir, await spawnRedis(port, [], dir));
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  get running(): boolean {
    return !this.server.stopped;
  }

  /** A client of the current server process (closed when that process is killed or disposed). */
  client(): Redis {
    return this.server.client();
  }

  pause(): void {
    this.server.pause();
  }

  resume(): void {
    this.server.resume();
  }

  /** SIGKILL: connections drop, data is gone. */
  async kill(): Promise<void> {
    await this.server.stop();
  }

  /** Starts an empty server on the same port (killing the current one first if it still runs). */
  async restart(): Promise<void> {
    if (this.running) await this.kill();
    this.server = await spawnRedis(this.port, [], this.dir);
  }

  async dispose(): Promise<void> {
    await this.server.stop();
    removeScratch(this.dir);
  }
}
