import { roundTripChild } from '../floors/round-trips';
import { wakeChild } from '../floors/pubsub-wake';
import type { ChildTask } from './context';
import { costChild } from './cost';
import { w1Child } from './w1-uncontended';
import { w2Child } from './w2-concurrent';
import { w3Child } from './w3-contended';
import { w4Child } from './w4-handoff';
import { w5Child } from './w5-many-waiters';

/** What a worker process can be asked to run (`Job.task`). */
export const CHILD_TASKS: Readonly<Record<string, ChildTask>> = {
  w1: w1Child,
  w2: w2Child,
  w3: w3Child,
  w4: w4Child,
  w5: w5Child,
  w5x: w5Child,
  cost: costChild,
  'floor-round-trips': roundTripChild,
  'floor-wake': wakeChild,
};
