import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

const REPO = join(__dirname, '..', '..', '..');

/** The commit a run measured, so a recorded table can name it (a baseline before a change). */
export interface Revision {
  /** HEAD, short. */
  readonly head: string;
  /** The last commit that changed the library itself (lib/, lua/): what the figures are about. */
  readonly library: string;
  /** Uncommitted changes in lib/, lua/ or bench/ when the run started. */
  readonly dirty: boolean;
}

function git(args: string[]): string | undefined {
  const run = spawnSync('git', args, { cwd: REPO, encoding: 'utf8' });
  return run.status === 0 ? run.stdout.trim() : undefined;
}

/** Undefined outside a git checkout (an unpacked tarball). */
export function currentRevision(): Revision | undefined {
  const head = git(['rev-parse', '--short', 'HEAD']);
  if (!head) return undefined;
  return {
    head,
    library: git(['log', '-1', '--format=%h', '--', 'lib', 'lua']) ?? head,
    dirty: (git(['status', '--porcelain', '--', 'lib', 'lua', 'bench']) ?? '') !== '',
  };
}

export function describeRevision(revision: Revision | undefined): string {
  if (!revision) return 'unknown commit';
  return `commit ${revision.head}${revision.dirty ? ' with uncommitted changes' : ''} (library lib/ and lua/ as of ${revision.library})`;
}
