import { LOCK_CONTRACT_KINDS, RUN_CONTRACT_KINDS } from './support/contract-kinds';
import { braceNames, describeLockContract, describeRunContract, redisEngine } from './support/lock-contract';

// The lock and run contracts of every kind again, on Redis, with names full of braces, escapes and
// bookkeeping suffixes: such a name is a lock like any other. (The testing kit builds its keys with
// the same code, and its own contract run covers the kit.)
for (const kind of LOCK_CONTRACT_KINDS) describeLockContract(kind, redisEngine, braceNames);
for (const kind of RUN_CONTRACT_KINDS) describeRunContract(kind, redisEngine, braceNames);
