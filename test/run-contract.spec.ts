import { RUN_CONTRACT_KINDS } from './support/contract-kinds';
import { describeRunContract } from './support/lock-contract';

// Through `run`, every exclusive kind (a semaphore of one permit and a multi-lock too) on Redis.
for (const kind of RUN_CONTRACT_KINDS) describeRunContract(kind);
