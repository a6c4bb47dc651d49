import { quoteName, show } from '../lock.messages';

// The testing kit's texts: apart from lib/lock.messages.ts so that none of them (nor the name of the
// kit's Lua VM) is in the library's main entry and its bundles.

export const TESTING_KIT_IN_PRODUCTION =
  'LockTestingModule (nestjs-redis-locks/testing) is in use with NODE_ENV=production: its locks live in this ' +
  'process only and exclude nothing across processes; use LockModule in production';

export const TESTING_KIT_NEEDS_FENGARI =
  'nestjs-redis-locks/testing runs the library\'s Lua scripts with the package "fengari", which is not installed: ' +
  'npm i -D fengari (it is an optional peer dependency, so production installs do not carry it)';

export const TESTING_KIT_BAD_HOLD = (name: string, problem: string): string =>
  `holdElsewhere(${quoteName(name)}): ${problem}`;

export const TESTING_KIT_BAD_REPLICAS = (value: unknown): string =>
  `LockTestingModule option "replicas" (or setReplicas) must be a whole number >= 0 (got ${show(value)})`;
