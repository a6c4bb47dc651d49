import { LOCK_CONTRACT_KINDS, RUN_CONTRACT_KINDS } from './support/contract-kinds';
import { braceNames, describeLockContract, describeRunContract, ENGINES } from './support/lock-contract';

// The lock and run contracts of every kind again, on Redis and on the testing kit, with names full
// of braces, escapes and bookkeeping suffixes: such a name is a lock like any other.
for (const engine of ENGINES()) {
  for (const kind of LOCK_CONTRACT_KINDS) describeLockContract(kind, engine, braceNames);
  for (const kind of RUN_CONTRACT_KINDS) describeRunContract(kind, engine, braceNames);
}
