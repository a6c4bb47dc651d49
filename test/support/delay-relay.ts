import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

/**
 * The relay's program (plain JS, run by `node -e`): every chunk leaves `delay` ms after it arrived,
 * both ways, in order (a chunk never overtakes an earlier one, also when the delay changes). The
 * delay is read from stdin ("<ms>" per line, acknowledged with "delay <ms>"); it prints "port <n>".
 */
const RELAY_PROGRAM = `
const net = require('node:net');
const [targetPort, initial] = process.argv.slice(1).map(Number);
let delay = initial;
function pipe(from, to) {
  const queue = [];
  let timer;
  let last = 0;
  const pump = () => {
    timer = undefined;
    const now = performance.now();
    while (queue.length > 0 && queue[0].due <= now) to.write(queue.shift().chunk);
    if (queue.length > 0) timer = setTimeout(pump, queue[0].due - now);
  };
  from.on('data', (chunk) => {
    last = Math.max(last, performance.now() + delay);
    queue.push({ due: last, chunk });
    if (!timer) timer = setTimeout(pump, Math.max(0, queue[0].due - performance.now()));
  });
  const end = () => { clearTimeout(timer); to.destroy(); from.destroy(); };
  from.on('close', end).on('error', end);
}
const server = net.createServer((client) => {
  const upstream = net.connect(targetPort, '127.0.0.1');
  client.setNoDelay(true);
  upstream.setNoDelay(true);
  pipe(client, upstream);
  pipe(upstream, client);
});
server.listen(0, '127.0.0.1', () => process.stdout.write('port ' + server.address().port + '\\n'));
require('node:readline').createInterface({ input: process.stdin }).on('line', (line) => {
  delay = Number(line);
  process.stdout.write('delay ' + delay + '\\n');
});
process.stdin.on('end', () => process.exit(0));
`;

/**
 * A slow network in front of a local Redis: clients of `url` see every reply 2 x `oneWayMs` after
 * their command left (a command reaches Redis `oneWayMs` after it was written, its reply comes back
 * `oneWayMs` after Redis answered), so a reply can arrive after a short lease it granted has ended.
 * Runs in its own process: an event-loop stall of the test delays nothing further. The delay can
 * change while connections are open (`setDelay`), e.g. zero while module instances bootstrap.
 */
export class DelayRelay {
  private constructor(
    readonly url: string,
    private readonly send: (line: string) => Promise<void>,
    private readonly stopRelay: () => Promise<void>,
  ) {}

  static async start(targetPort: number, oneWayMs: number): Promise<DelayRelay> {
    const child = spawn(process.execPath, ['-e', RELAY_PROGRAM, String(targetPort), String(oneWayMs)], { stdio: ['pipe', 'pipe', 'inherit'] });
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    const kill = (): void => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    };
    process.once('exit', kill);
    const lines = createInterface({ input: child.stdout! });
    const waiting: Array<{ prefix: string; resolve: (line: string) => void }> = [];
    lines.on('line', (line) => {
      const index = waiting.findIndex((w) => line.startsWith(w.prefix));
      if (index >= 0) waiting.splice(index, 1)[0].resolve(line);
    });
    const expect = (prefix: string): Promise<string> =>
      new Promise((resolve, reject) => {
        waiting.push({ prefix, resolve });
        void exited.then(() => reject(new Error(`the delay relay exited before printing ${prefix}`)));
      });
    const port = Number((await expect('port ')).slice('port '.length));
    return new DelayRelay(
      `redis://127.0.0.1:${port}`,
      async (line) => {
        const acknowledged = expect(`delay ${line}`);
        child.stdin!.write(`${line}\n`);
        await acknowledged;
      },
      async () => {
        kill();
        await exited;
        process.removeListener('exit', kill);
      },
    );
  }

  /** From now on, every chunk that arrives is held `oneWayMs` (earlier chunks keep their time, and their order). */
  setDelay(oneWayMs: number): Promise<void> {
    return this.send(String(oneWayMs));
  }

  /** Kills the relay: every connection through it drops. */
  stop(): Promise<void> {
    return this.stopRelay();
  }
}
