import { HoldWitness } from '../support/hold-witness';

/** The witness the hold-model tests rely on: what it lets through and what it reports. */
describe('HoldWitness', () => {
  const live = () => new AbortController();

  it('reports a second holder entering while the first is inside with a live signal', () => {
    const witness = new HoldWitness();
    const first = witness.enter('first', 'lock:a', live().signal);
    const second = witness.enter('second', 'lock:a', live().signal);
    witness.exit(first);
    witness.exit(second);
    expect(witness.violations()).toHaveLength(1);
    expect(witness.violations()[0]).toMatch(/^second entered lock:a .* while first .* live signal \(aborted never\)$/);
  });

  it('lets a second holder in once the first one was told (its signal aborted before)', () => {
    const witness = new HoldWitness();
    const told = live();
    witness.enter('first', 'lock:a', told.signal);
    told.abort(new Error('lost'));
    witness.enter('second', 'lock:a', live().signal);
    expect(witness.violations()).toEqual([]);
  });

  it('reports a first holder told only after the second one entered', () => {
    const witness = new HoldWitness();
    const late = live();
    witness.enter('first', 'lock:a', late.signal);
    witness.enter('second', 'lock:a', live().signal);
    late.abort(new Error('too late'));
    expect(witness.violations()).toHaveLength(1);
  });

  it('allows one holder re-entering, shared readers, disjoint resources and one after another', () => {
    const witness = new HoldWitness();
    const outer = witness.enter('one', 'lock:a', live().signal);
    witness.exit(witness.enter('one', 'lock:a', live().signal));
    witness.enter('other', 'lock:b', live().signal);
    witness.exit(outer);
    witness.enter('next', 'lock:a', live().signal);
    witness.enter('reader 1', 'rw:a', live().signal, 'shared');
    witness.enter('reader 2', 'rw:a', live().signal, 'shared');
    expect(witness.violations()).toEqual([]);
    witness.enter('writer', 'rw:a', live().signal, 'exclusive');
    expect(witness.violations()).toHaveLength(2);
  });

  it('sees a multi-lock overlap on any one member', () => {
    const witness = new HoldWitness();
    witness.enter('member holder', 'lock:b', live().signal);
    witness.enter('multi', ['lock:a', 'lock:b'], live().signal);
    expect(witness.violations()).toEqual([expect.stringContaining('multi entered lock:b')]);
  });
});
