import { ReplyError } from 'ioredis';

/** A Redis status reply (`+OK`): a string to a client, `{ ok = ... }` to a script. */
export class StatusReply {
  constructor(readonly text: string) {}
}

/** What a command answers: RESP2's integer, bulk string, nil, array and status. */
export type Reply = number | string | null | StatusReply | Reply[];

/** Status `OK`. */
export const OK = new StatusReply('OK');

export const WRONGTYPE = 'WRONGTYPE Operation against a key holding the wrong kind of value';
export const NOT_INTEGER = 'ERR value is not an integer or out of range';
export const SYNTAX = 'ERR syntax error';

/** An error reply, as ioredis hands it over. */
export const error = (message: string): Error => new ReplyError(message);

/** An integer argument (`ERR value is not an integer or out of range` otherwise). */
export function integer(text: string): number {
  if (!/^-?\d+$/.test(text)) throw error(NOT_INTEGER);
  const value = Number(text);
  if (!Number.isSafeInteger(value)) throw error(NOT_INTEGER);
  return value;
}

/** Start and stop of LRANGE/ZRANGE (negative counts from the end) as a slice of `length` items. */
export function range(length: number, startText: string, stopText: string): [number, number] {
  let start = integer(startText);
  let stop = integer(stopText);
  if (start < 0) start = Math.max(0, length + start);
  if (stop < 0) stop = length + stop;
  stop = Math.min(stop, length - 1);
  return start > stop ? [0, 0] : [start, stop + 1];
}
