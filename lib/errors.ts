/** Every error the library throws on purpose, one file per subject in lib/errors/. */
export * from './errors/lock-error';
export * from './errors/hold-errors';
export * from './errors/bad-name-errors';
export * from './errors/deadlock-error';
export * from './errors/redis-errors';
