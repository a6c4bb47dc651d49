import { createServer, type Server, Socket } from 'node:net';

/**
 * A TCP proxy in front of a Redis server that can swallow the server's replies while still
 * forwarding commands (a reply lost on the way back: the command ran, the client never learns it),
 * and reset every connection (so ioredis reconnects and resends what it got no answer for).
 */
export class ReplyDroppingProxy {
  /** While true, commands reach Redis but nothing Redis answers reaches the client. */
  dropReplies = false;
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
      client.on('data', (chunk) => upstream.write(chunk));
      upstream.on('data', (chunk) => {
        if (!proxy!.dropReplies) client.write(chunk);
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
