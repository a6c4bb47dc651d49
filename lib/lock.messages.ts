/**
 * Every text the library logs or puts in a configuration error, in one place: lib/messages/, one file
 * per subject (the testing kit's own are in testing/testing-kit.messages.ts, out of the main entry).
 */
export * from './messages/quoting';
export * from './messages/arguments.messages';
export * from './messages/errors.messages';
export * from './messages/holds.messages';
export * from './messages/decorators.messages';
export * from './messages/redis.messages';
