import { monotonicNow } from '../monotonic-clock';

/** What the deadline heap needs of a sleeping waiter (`Waiter` is one). */
export interface Sleeping {
  /** When the sleep ends at the latest (ms on the monotonic clock). */
  readonly wakeAt: number;
  /** Its place in the heap, kept by the heap; -1 when not in it. */
  heapIndex: number;
  /** Called by the heap's timer once `wakeAt` has passed; must remove the waiter from the heap. */
  deadlinePassed(): void;
}

/**
 * The sleep deadlines of every waiter of the process: one timer, armed for the earliest deadline,
 * over a min-heap of sleeping waiters (each knows its place, so a wake removes it in O(log n)),
 * instead of one `setTimeout` per sleeping waiter. A waiter still wakes no earlier than its
 * deadline and about when it passes.
 */
export class SleepDeadlines {
  private readonly heap: Sleeping[] = [];
  private timer: NodeJS.Timeout | undefined;
  /** The deadline the timer is armed for. */
  private armedFor = Number.POSITIVE_INFINITY;
  private readonly fire = (): void => this.expire();

  add(waiter: Sleeping): void {
    waiter.heapIndex = this.heap.length;
    this.heap.push(waiter);
    this.up(waiter.heapIndex);
    if (waiter.wakeAt < this.armedFor) this.arm(waiter.wakeAt);
  }

  remove(waiter: Sleeping): void {
    const index = waiter.heapIndex;
    if (index < 0) return;
    waiter.heapIndex = -1;
    const last = this.heap.pop()!;
    if (last !== waiter) {
      this.heap[index] = last;
      last.heapIndex = index;
      this.down(index);
      this.up(last.heapIndex);
    }
    // The timer stays armed: when it fires for nobody, it re-arms for the new earliest deadline.
    if (this.heap.length === 0) this.disarm();
  }

  private expire(): void {
    this.timer = undefined;
    this.armedFor = Number.POSITIVE_INFINITY;
    const now = monotonicNow();
    while (this.heap.length > 0 && this.heap[0].wakeAt <= now) this.heap[0].deadlinePassed();
    if (this.heap.length > 0) this.arm(this.heap[0].wakeAt);
  }

  private arm(at: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.armedFor = at;
    this.timer = setTimeout(this.fire, Math.max(1, at - monotonicNow()));
  }

  private disarm(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.armedFor = Number.POSITIVE_INFINITY;
  }

  private up(index: number): void {
    const { heap } = this;
    const waiter = heap[index];
    while (index > 0) {
      const parentIndex = (index - 1) >> 1;
      const parent = heap[parentIndex];
      if (parent.wakeAt <= waiter.wakeAt) break;
      heap[index] = parent;
      parent.heapIndex = index;
      index = parentIndex;
    }
    heap[index] = waiter;
    waiter.heapIndex = index;
  }

  private down(index: number): void {
    const { heap } = this;
    const waiter = heap[index];
    const half = heap.length >> 1;
    while (index < half) {
      let child = 2 * index + 1;
      const right = child + 1;
      if (right < heap.length && heap[right].wakeAt < heap[child].wakeAt) child = right;
      if (heap[child].wakeAt >= waiter.wakeAt) break;
      heap[index] = heap[child];
      heap[index].heapIndex = index;
      index = child;
    }
    heap[index] = waiter;
    waiter.heapIndex = index;
  }
}

/** The process's one heap: every module instance's waiters share its timer. */
export const sleepDeadlines = new SleepDeadlines();
