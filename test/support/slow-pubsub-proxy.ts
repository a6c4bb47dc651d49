import { createServer, type Server, Socket } from 'node:net';

/**
 * A TCP proxy in front of Redis that can delay what Redis sends to the connections that subscribed
 * (pub/sub messages travel on their own TCP connection: a slow network path, a full socket buffer,
 * a retransmit delays them and nothing else). Order on each connection is kept.
 */
export class SlowPubSubProxy {
  /** While > 0, data Redis sends to a subscribed connection reaches the client this much later. */
  pubSubDelayMs = 0;
  private readonly sockets = new Set<Socket>();

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  static async start(targetPort: number): Promise<SlowPubSubProxy> {
    let proxy: SlowPubSubProxy | undefined;
    const server = createServer((client) => {
      const upstream = new Socket();
      upstream.connect(targetPort, '127.0.0.1');
      proxy!.sockets.add(client);
      proxy!.sockets.add(upstream);
      let subscriber = false;
      let releaseAt = 0;
      client.on('data', (chunk) => {
        if (/subscribe/i.test(chunk.toString('latin1'))) subscriber = true;
        upstream.write(chunk);
      });
      upstream.on('data', (chunk) => {
        const delay = subscriber ? proxy!.pubSubDelayMs : 0;
        const at = Math.max(Date.now() + delay, releaseAt);
        releaseAt = at;
        if (at <= Date.now()) client.write(chunk);
        else setTimeout(() => client.writable && client.write(chunk), at - Date.now());
      });
      const close = (): void => {
        client.destroy();
        upstream.destroy();
      };
      client.on('close', close).on('error', close);
      upstream.on('close', close).on('error', close);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    proxy = new SlowPubSubProxy(server, (server.address() as { port: number }).port);
    return proxy;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
