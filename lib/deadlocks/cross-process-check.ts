import { LockDeadlockError, type DeadlockStep } from '../errors';
import { LuaScript } from '../redis/lua-script';
import { monotonicNow } from '../monotonic-clock';
import type { ChainHold, DeadlockEngine, WaitKind, WaitMode, WaitNode } from './wait-node';
import { sameDeployment } from './deployment';

const scripts = {
  record: LuaScript.named('deadlock-record'),
  step: LuaScript.named('deadlock-step'),
};

/**
 * Most step scripts one check runs (docs/deadlocks.md#across-processes-after-deadlockcheckafter);
 * the walk goes breadth first, so the shortest ways back are tried first.
 */
export const MAX_CHECK_STEPS = 64;
/** Most line entries a step looks at. */
const LINE_ENTRIES_LOOKED_AT = 1_000;
/** A record lives this many check periods (and at least `MIN_RECORD_LIFE_MS`) unless refreshed. */
const RECORD_LIFE_PERIODS = 3;
const MIN_RECORD_LIFE_MS = 3_000;

/** What a wait-for record says (JSON, short keys: it is stored beside every hold of the chain). */
interface WaitRecord {
  /** The wait's id. */
  readonly w: string;
  /** Its start on the server clock, ms. */
  readonly s: number;
  /** The waited lock: layout, main key, name, the wait's line entry, mode, permits asked. */
  readonly k: WaitKind;
  readonly key: string;
  readonly n: string;
  readonly e: string;
  readonly m: WaitMode;
  readonly q: number;
  readonly o: string;
  /** The waiting process: host, pid, client name. */
  readonly h: string;
  readonly p: number;
  readonly c: string;
}

/** A wait the walk stands at: what it waits for, and the waits (id, start) along the path so far. */
interface WalkPoint {
  readonly kind: WaitKind;
  readonly key: string;
  readonly name: string;
  readonly entry: string;
  readonly mode: WaitMode;
  readonly need: number;
  readonly owner: string;
  readonly steps: readonly DeadlockStep[];
  readonly waits: ReadonlyArray<{ readonly id: string; readonly start: number }>;
}

/** A watched wait: its timer, and the records it wrote (deleted when it ends). */
interface Watch {
  timer: NodeJS.Timeout | undefined;
  readonly written: Set<ChainHold>;
  ended: boolean;
}

/**
 * The cross-process side of deadlock detection for one module instance: a wait of a chain that
 * holds locks, once it has lasted `deadlockCheckAfter`, keeps wait-for records beside its chain's
 * holds and walks holders -> their records -> ... through Redis; it refuses itself when it is the
 * youngest wait of a cycle back to its own chain (docs/deadlocks.md).
 */
export class CrossProcessDeadlocks {
  private readonly watches = new Map<WaitNode, Watch>();

  constructor(private readonly engine: DeadlockEngine) {}

  private get periodMs(): number {
    return this.engine.options.deadlockCheckAfter;
  }

  /** Starts checking `node` once it has waited `deadlockCheckAfter` (0: never; a RedLock: never). */
  watch(node: WaitNode): void {
    const after = this.periodMs;
    if (after <= 0 || !node.target.crossProcess || this.watches.has(node)) return;
    const watch: Watch = { timer: undefined, written: new Set(), ended: false };
    this.watches.set(node, watch);
    this.schedule(node, watch, Math.max(0, node.startedAt + after - monotonicNow()));
  }

  /** The wait ended: no more checks, and its records go. */
  unwatch(node: WaitNode): void {
    const watch = this.watches.get(node);
    if (!watch) return;
    this.watches.delete(node);
    watch.ended = true;
    clearTimeout(watch.timer);
    for (const entry of [...watch.written]) this.removeRecord(node, watch, entry);
  }

  private schedule(node: WaitNode, watch: Watch, delayMs: number): void {
    watch.timer = setTimeout(() => {
      watch.timer = undefined;
      this.check(node, watch).then(
        (again) => {
          if (again && !watch.ended) this.schedule(node, watch, Math.max(1, Math.floor(this.periodMs / 2)));
        },
        () => {
          if (!watch.ended) this.schedule(node, watch, Math.max(1, Math.floor(this.periodMs / 2)));
        },
      );
    }, delayMs);
    watch.timer.unref?.();
  }

  /**
   * One check: refresh the records, walk, refuse when this wait is the youngest of a cycle. False
   * when there is nothing more to check (the chain holds nothing on this Redis any more).
   */
  private async check(node: WaitNode, watch: Watch): Promise<boolean> {
    const own = node.liveChain().filter((entry) => sameDeployment(entry.engine, this.engine));
    // A record whose hold no longer waits with this wait (its body ended, the hold went) goes now.
    for (const entry of watch.written) if (!own.includes(entry)) this.removeRecord(node, watch, entry);
    if (own.length === 0) return false;
    await this.writeRecords(node, own, watch);
    if (watch.ended || node.serverStart === undefined) return !watch.ended;
    const cycle = await this.walk(node, own, watch);
    if (!cycle || watch.ended) return !watch.ended;
    const youngest = cycle.waits.reduce((a, b) => (b.start > a.start || (b.start === a.start && b.id > a.id) ? b : a));
    // Only the youngest refuses itself; the others go on (its own check refuses it).
    if (youngest.id === node.id) node.refuse(new LockDeadlockError(cycle.steps));
    return true;
  }

  /** Writes (or refreshes) this wait's record beside each hold of its chain; learns its server start. */
  private async writeRecords(node: WaitNode, own: readonly ChainHold[], watch: Watch): Promise<void> {
    const { target } = node;
    const { host, pid, clientName } = this.engine.instances.self;
    const lifeMs = Math.max(RECORD_LIFE_PERIODS * this.periodMs, MIN_RECORD_LIFE_MS);
    const text = JSON.stringify({
      w: node.id,
      k: target.kind,
      key: target.lockKey,
      n: target.name,
      e: node.lineEntry ?? '',
      m: target.mode,
      q: target.need,
      o: target.ownerId,
      h: host,
      p: pid,
      c: clientName,
    } satisfies Omit<WaitRecord, 's'>);
    // The first record fixes the wait's start on the server's clock; the others carry the same.
    const [first, ...rest] = own;
    const start = Number(await this.writeRecord(first, node, text, lifeMs));
    this.written(node, watch, first);
    node.serverStart ??= start;
    await Promise.all(rest.map((entry) => this.writeRecord(entry, node, text, lifeMs).then(() => this.written(node, watch, entry))));
  }

  /**
   * Notes a record written for `entry`: it goes when the wait ends, or as soon as the body that
   * recorded the hold ends (what the body left running no longer holds that hold up: its record must
   * not outlive it, docs/deadlocks.md).
   */
  private written(node: WaitNode, watch: Watch, entry: ChainHold): void {
    if (watch.written.has(entry)) return;
    watch.written.add(entry);
    // A wait that ended while its records were being written: this one goes at once.
    if (watch.ended) return this.removeRecord(node, watch, entry);
    entry.frame?.onEnd(() => this.removeRecord(node, watch, entry));
  }

  private removeRecord(node: WaitNode, watch: Watch, entry: ChainHold): void {
    if (!watch.written.delete(entry)) return;
    const { hold, engine } = entry;
    engine.client.hdel(recordsKey(hold.lockKey), `${hold.ownerId} ${node.id}`).catch(ignore);
  }

  private writeRecord(entry: ChainHold, node: WaitNode, text: string, lifeMs: number): Promise<unknown> {
    const { hold, engine } = entry;
    const start = node.serverStart === undefined ? '' : node.serverStart;
    const args = [`${hold.ownerId} ${node.id}`, text, lifeMs, start, Math.floor(monotonicNow() - node.startedAt)];
    return engine.call(node.target.name, (ticket) => scripts.record.run(engine.client, [recordsKey(hold.lockKey)], args, ticket));
  }

  /**
   * Walks from `node`'s lock: its holders (by the wait's needs), their chains' records, the locks
   * those wait for, ... until a holder is in `own` (a cycle), nothing is left, or the step budget
   * runs out.
   */
  private async walk(
    node: WaitNode,
    own: readonly ChainHold[],
    watch: Watch,
  ): Promise<{ steps: DeadlockStep[]; waits: ReadonlyArray<{ id: string; start: number }> } | undefined> {
    const { target } = node;
    const ownHolds = new Set(own.map(({ hold }) => `${hold.lockKey}\n${hold.ownerId}`));
    const { host, pid, clientName } = this.engine.instances.self;
    const self = { host, pid, clientName };
    const visited = new Set<string>([node.id]);
    const queue: WalkPoint[] = [
      {
        kind: target.kind,
        key: target.lockKey,
        name: target.name,
        entry: node.lineEntry ?? '',
        mode: target.mode,
        need: target.need,
        owner: target.ownerId,
        steps: [],
        waits: [{ id: node.id, start: node.serverStart as number }],
      },
    ];
    let budget = MAX_CHECK_STEPS;
    while (queue.length > 0 && budget > 0 && !watch.ended) {
      const point = queue.shift() as WalkPoint;
      budget -= 1;
      for (const blocker of await this.step(point)) {
        const steps = [...point.steps];
        if (blocker.via) steps.push({ lock: point.name, owner: blocker.via, inLine: true });
        const mine = ownHolds.has(`${point.key}\n${blocker.owner}`);
        const instance = mine ? self : blocker.records[0] && { host: blocker.records[0].h, pid: blocker.records[0].p, clientName: blocker.records[0].c };
        steps.push({ lock: point.name, owner: blocker.owner, ...(instance ? { instance } : {}) });
        if (mine) return { steps, waits: point.waits };
        for (const record of blocker.records) {
          if (visited.has(record.w)) continue;
          visited.add(record.w);
          queue.push({
            kind: record.k,
            key: record.key,
            name: record.n,
            entry: record.e,
            mode: record.m,
            need: record.q,
            owner: record.o,
            steps,
            waits: [...point.waits, { id: record.w, start: record.s }],
          });
        }
      }
    }
    return undefined;
  }

  /** One step script at `point`'s lock: the holders its wait needs released, with their records. */
  private async step(point: WalkPoint): Promise<Array<{ owner: string; via: string; records: WaitRecord[] }>> {
    const { engine } = this;
    const { key } = point;
    const seenOrMain = point.kind === 'semaphore' ? key : `${key}:seen`;
    const leasesOrMain = point.kind === 'lock' ? key : `${key}:leases`;
    const keys = [key, `${key}:line`, `${key}:deadlines`, seenOrMain, leasesOrMain, recordsKey(key)];
    const args = [point.kind, point.owner, point.entry, point.mode, point.need, LINE_ENTRIES_LOOKED_AT];
    const reply = (await engine.call(point.name, (ticket) => scripts.step.run(engine.client, keys, args, ticket))) as unknown[];
    const blockers: Array<{ owner: string; via: string; records: WaitRecord[] }> = [];
    for (let i = 1; i < reply.length; ) {
      const owner = String(reply[i]);
      const via = String(reply[i + 1] ?? '');
      const count = Number(reply[i + 2]);
      const records: WaitRecord[] = [];
      for (let r = 0; r < count; r += 1) {
        const parsed = parseRecord(reply[i + 3 + r]);
        if (parsed) records.push(parsed);
      }
      blockers.push({ owner, via, records });
      i += 3 + count;
    }
    return blockers;
  }
}

/** The wait-for records kept beside a held lock (same hash slot as the lock). */
export const recordsKey = (lockKey: string): string => `${lockKey}:waitfor`;

const ignore = (): undefined => undefined;

/** A record as a step returns it: '<wait start> <json>'. */
function parseRecord(raw: unknown): WaitRecord | undefined {
  const text = String(raw);
  const space = text.indexOf(' ');
  try {
    const record = { ...(JSON.parse(text.slice(space + 1)) as WaitRecord), s: Number(text.slice(0, space)) };
    return typeof record.w === 'string' && typeof record.key === 'string' && Number.isFinite(record.s) ? record : undefined;
  } catch {
    return undefined;
  }
}
