import type { DeadlockStep } from '../errors';
import type { HeldLock } from '../runtime/held-locks';
import { keptByWatchdog, stillHeld, type ChainHold, type DeadlockEngine, type WaitNode } from './wait-node';
import { sameDeployment } from './deployment';

/** How many waits of a lock in this process a semaphore or read wait looks through for those ahead of it (more: not seen here). */
const AHEAD_LOOKED_AT = 64;

/** A cycle as found: the waits along it (the first is where the walk began) and its steps. */
export interface FoundCycle {
  /** `waits[i]` waits at `steps` from `stepStart[i]` on; the last step's owner is in `waits[0]`'s chain. */
  readonly waits: readonly WaitNode[];
  readonly stepStart: readonly number[];
  readonly steps: readonly DeadlockStep[];
}

/** A hold a wait needs released, the module instance it was taken through, and the wait ahead in line it comes through (if so). */
interface Blocker {
  readonly hold: HeldLock;
  readonly engine: DeadlockEngine;
  readonly via: WaitNode | undefined;
}

/**
 * The process's waits and what they wait for: finds a cycle through local facts only (this
 * process's holds and waits), at once, when a wait misses (docs/deadlocks.md#in-one-process-at-once).
 * Waits of chains that hold nothing are registered (they stand in lines) but never walk.
 */
export class WaitForGraph {
  /** Waits by the hold they hold up (from their call chain). */
  private readonly waitsByHold = new Map<HeldLock, Set<WaitNode>>();
  /** Waits by the lock they wait for, in registration order (engine's lock key). */
  private readonly waitsByLock = new Map<DeadlockEngine, Map<string, Set<WaitNode>>>();
  /** The process's running module instances: a lock's holders are those of every one on its Redis. */
  private readonly engines = new Set<DeadlockEngine>();

  /** A module instance started (its holds count for waits of the others on the same Redis). */
  addEngine(engine: DeadlockEngine): void {
    this.engines.add(engine);
  }

  removeEngine(engine: DeadlockEngine): void {
    this.engines.delete(engine);
  }

  /**
   * This process's holders of a lock: through the waiting module instance and every other one that
   * reaches the same Redis (the same key there is the same lock).
   */
  private *holdersOf(engine: DeadlockEngine, lockKey: string): Iterable<readonly [HeldLock, DeadlockEngine]> {
    const own = engine.holds.holdersOf(lockKey);
    if (own) for (const hold of own.values()) yield [hold, engine];
    for (const other of this.engines) {
      if (other === engine || !sameDeployment(other, engine)) continue;
      const theirs = other.holds.holdersOf(lockKey);
      if (theirs) for (const hold of theirs.values()) yield [hold, other];
    }
  }

  add(node: WaitNode): void {
    for (const { hold } of node.chain) {
      let waits = this.waitsByHold.get(hold);
      if (!waits) this.waitsByHold.set(hold, (waits = new Set()));
      waits.add(node);
    }
    const { engine, lockKey } = node.target;
    let locks = this.waitsByLock.get(engine);
    if (!locks) this.waitsByLock.set(engine, (locks = new Map()));
    let waits = locks.get(lockKey);
    if (!waits) locks.set(lockKey, (waits = new Set()));
    waits.add(node);
  }

  remove(node: WaitNode): void {
    for (const { hold } of node.chain) {
      const waits = this.waitsByHold.get(hold);
      if (waits?.delete(node) && waits.size === 0) this.waitsByHold.delete(hold);
    }
    const { engine, lockKey } = node.target;
    const locks = this.waitsByLock.get(engine);
    const waits = locks?.get(lockKey);
    if (!locks || !waits?.delete(node) || waits.size > 0) return;
    locks.delete(lockKey);
    if (locks.size === 0) this.waitsByLock.delete(engine);
  }

  /**
   * A cycle from `start` back to a hold of its own call chain, through this process's holds and
   * waits, or undefined. Costs nothing for a wait whose chain holds nothing (it cannot close one).
   */
  findCycle(start: WaitNode): FoundCycle | undefined {
    const own = start.liveChain();
    if (own.length === 0) return undefined;
    const ownHolds = new Set(own.map((entry) => entry.hold));
    const visited = new Set<WaitNode>([start]);
    const waits: WaitNode[] = [];
    const stepStart: number[] = [];
    const steps: DeadlockStep[] = [];
    const walk = (node: WaitNode): boolean => {
      waits.push(node);
      stepStart.push(steps.length);
      for (const { hold, engine, via } of this.blockers(node)) {
        const mark = steps.length;
        if (via) steps.push(localStep(node.target.name, via.target.engine, via.target.ownerId, true));
        steps.push(localStep(node.target.name, engine, hold.ownerId, false));
        if (ownHolds.has(hold)) return true;
        for (const next of this.waitsHeldUpBy(hold)) {
          if (visited.has(next)) continue;
          visited.add(next);
          if (walk(next)) return true;
        }
        steps.length = mark;
      }
      waits.pop();
      stepStart.pop();
      return false;
    };
    return walk(start) ? { waits, stepStart, steps } : undefined;
  }

  /** The waits whose call chain `hold` is in, and that it still holds up. */
  private *waitsHeldUpBy(hold: HeldLock): Iterable<WaitNode> {
    const waits = this.waitsByHold.get(hold);
    if (!waits) return;
    for (const wait of waits) if (wait.chain.some((entry: ChainHold) => entry.hold === hold && stillHeld(entry))) yield wait;
  }

  /**
   * The local holds `node` needs released: directly by its mode, or because a wait ahead of it in
   * line that it cannot pass needs them (docs/deadlocks.md#the-wait-for-graph).
   */
  private blockers(node: WaitNode): Blocker[] {
    const { engine, lockKey, ownerId, mode, need, total } = node.target;
    const holders = [...this.holdersOf(engine, lockKey)];
    if (holders.length === 0) return [];
    const found: Blocker[] = [];
    const taken = new Set<HeldLock>();
    const add = ([hold, through]: readonly [HeldLock, DeadlockEngine], via: WaitNode | undefined): void => {
      if (taken.has(hold) || hold.ownerId === ownerId || !keptByWatchdog(hold)) return;
      taken.add(hold);
      found.push({ hold, engine: through, via });
    };
    if (mode === 'exclusive' || mode === 'write') {
      // Everything ahead in line needs the same holders released: nothing more to find there.
      for (const holder of holders) add(holder, undefined);
      return found;
    }
    if (mode === 'read') {
      for (const holder of holders) if (holder[0].writeHolds > 0) add(holder, undefined);
      const writer = this.aheadOf(node, (ahead) => ahead.target.mode === 'write');
      if (writer) for (const holder of holders) add(holder, writer);
      return found;
    }
    // Permits: a holder is needed when `need` could not be free without its permits.
    const needs = (hold: HeldLock, asked: number): boolean => total - hold.permits < asked;
    for (const holder of holders) if (needs(holder[0], need)) add(holder, undefined);
    // The wait ahead asking for the most needs every holder a smaller one needs: one pass over it.
    let biggest: WaitNode | undefined;
    this.aheadOf(node, (ahead) => {
      if (ahead.target.need > (biggest?.target.need ?? need)) biggest = ahead;
      return false;
    });
    if (biggest) for (const holder of holders) if (needs(holder[0], biggest.target.need)) add(holder, biggest);
    return found;
  }

  /**
   * The first local wait of the same lock ahead of `node` in line for which `test` is true (looking
   * at most at the first `AHEAD_LOOKED_AT`): a wait stands ahead when its join was answered first.
   */
  private aheadOf(node: WaitNode, test: (ahead: WaitNode) => boolean): WaitNode | undefined {
    if (node.lineSeq === undefined) return undefined;
    const waits = this.waitsByLock.get(node.target.engine)?.get(node.target.lockKey);
    if (!waits) return undefined;
    let looked = 0;
    for (const ahead of waits) {
      if (++looked > AHEAD_LOOKED_AT) break;
      if (ahead === node || ahead.lineSeq === undefined || ahead.lineSeq >= node.lineSeq) continue;
      if (test(ahead)) return ahead;
    }
    return undefined;
  }
}

/** A step whose owner runs in this process, through module instance `engine`. */
function localStep(lock: string, engine: DeadlockEngine, owner: string, inLine: boolean): DeadlockStep {
  const { host, pid, clientName } = engine.instances.self;
  return { lock, owner, ...(inLine ? { inLine } : {}), instance: { host, pid, clientName } };
}

/**
 * The cycle as the wait `victim` (one of `found.waits`) sees it: its own step first, the step whose
 * owner is in its own call chain last.
 */
export function cycleFrom(found: FoundCycle, victim: WaitNode): DeadlockStep[] {
  const at = found.waits.indexOf(victim);
  const from = found.stepStart[at] ?? 0;
  return [...found.steps.slice(from), ...found.steps.slice(0, from)];
}

/** The youngest wait of a cycle whose chain holds anything: the one refused (docs/deadlocks.md#the-victim-the-youngest-wait). */
export function youngestOf(waits: readonly WaitNode[]): WaitNode {
  let youngest = waits[0];
  for (const wait of waits) if (wait.seq > youngest.seq && wait.liveChain().length > 0) youngest = wait;
  return youngest;
}

/** The process's one graph: module instances share it (a chain may hold one's lock and wait for another's). */
export const waitForGraph = new WaitForGraph();
