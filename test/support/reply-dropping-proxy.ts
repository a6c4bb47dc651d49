import { createServer, type Server, Socket } from 'node:net';

/**
 * A TCP proxy in front of a Redis server that can swallow the server's replies while still
 * forwarding commands (a reply lost on the way back: the command ran, the client never learns it),
 * and reset every connection (so ioredis reconnects and resends what it got no answer for). It can
 * also delay what Redis sends to the connections that subscribed (`pubSubDelayMs`): pub/sub
 * messages travel on their own TCP connection, which a slow path, a full buffer or a retransmit
 * delays and nothing else. Order on each connection is kept.
 */
export class ReplyDroppingProxy {
  /** While true, commands reach Redis but nothing Redis answers reaches the client. */
  dropReplies = false;
  /** While > 0, what Redis sends to a connection that subscribed reaches it this much later. */
  pubSubDelayMs = 0;
  private readonly sockets = new Set<Socket>();

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  static async start(targetPort: number): Promise<ReplyDroppingProxy> {
    let proxy: ReplyDroppingProxy | undefined;
    const server = createServer((client) => {
      const upstream = new Socket();
      upstream.connect(targetPort, '127.0.0.1');
      proxy!.track(client, upstream);
      let subscriber = false;
      let releaseAt = 0;
      client.on('data', (chunk) => {
        // The command name as a bulk string (a script's text may mention the word).
        if (/\$\d+\r\n[sp]?subscribe\r\n/i.test(chunk.toString('latin1'))) subscriber = true;
        upstream.write(chunk);
      });
      upstream.on('data', (chunk) => {
        if (proxy!.dropReplies) return;
        const at = Math.max(Date.now() + (subscriber ? proxy!.pubSubDelayMs : 0), releaseAt);
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
    proxy = new ReplyDroppingProxy(server, (server.address() as { port: number }).port);
    return proxy;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Drops every proxied connection at once, as a network reset would. */
  resetConnections(): void {
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
  }

  async close(): Promise<void> {
    this.resetConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private track(...sockets: Socket[]): void {
    for (const socket of sockets) {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    }
  }
}
