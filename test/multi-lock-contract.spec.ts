import { multiKind } from './support/contract-kinds';
import { describeLockContract } from './support/lock-contract';

// A multi-lock is a Lock like the others: the whole contract, on Redis.
describeLockContract(multiKind);
