import { HASH_COMMANDS } from './hash-commands';
import { KEY_COMMANDS } from './key-commands';
import { KeyStore, type Commands } from './key-store';
import { LIST_COMMANDS } from './list-commands';
import { error, type Reply } from './replies';
import { STRING_COMMANDS } from './string-commands';
import { ZSET_COMMANDS } from './zset-commands';

const COMMANDS: Commands = { ...KEY_COMMANDS, ...STRING_COMMANDS, ...HASH_COMMANDS, ...LIST_COMMANDS, ...ZSET_COMMANDS };

/**
 * The data of one simulated Redis server: strings, hashes, lists and sorted sets with key expiry,
 * and the commands the library's scripts and queries use, answering as Redis 7 does. Expiry is
 * read from the server's clock (`InMemoryRedis.now`) when a key is touched (no timer), so fake
 * timers move it; a script sees one clock for its whole run, as in Redis.
 */
export class Keyspace extends KeyStore {
  /** Runs one command; `now` is the command's (or the enclosing script's) clock. */
  execute(name: string, args: readonly string[], now: number): Reply {
    const command = COMMANDS[name.toLowerCase()];
    if (!command) throw error(`ERR unknown command '${name}', with args beginning with: ${args.slice(0, 3).map((a) => `'${a}'`).join(' ')}`);
    if (args.length < command.minArgs) throw error(`ERR wrong number of arguments for '${name.toLowerCase()}' command`);
    return command.run(this, args, now);
  }
}

/** Command names the keyspace answers (publish and friends are the server's). */
export const KEYSPACE_COMMANDS: readonly string[] = Object.keys(COMMANDS);
