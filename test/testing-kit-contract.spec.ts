import { LOCK_CONTRACT_KINDS, RUN_CONTRACT_KINDS } from './support/contract-kinds';
import { describeLockContract, describeRunContract, kitEngine } from './support/lock-contract';

// The same suites that run against Redis (test/*-contract.spec.ts), unchanged, on the testing kit.
for (const kind of LOCK_CONTRACT_KINDS) describeLockContract(kind, kitEngine);
for (const kind of RUN_CONTRACT_KINDS) describeRunContract(kind, kitEngine);
