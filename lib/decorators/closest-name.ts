/**
 * The parameter a mistyped name most likely meant: the same but for case, one inside the other
 * (`#orderId` for `id`, `#dto` for `orderDto`), or at most two edits away; undefined when none or
 * several fit equally.
 */
export function closestName(asked: string, names: readonly string[]): string | undefined {
  const lower = asked.toLowerCase();
  const score = (name: string): number => {
    const candidate = name.toLowerCase();
    if (candidate === lower) return 0;
    if (candidate.length >= 2 && (lower.endsWith(candidate) || lower.startsWith(candidate) || candidate.includes(lower))) return 1;
    const edits = editDistance(lower, candidate);
    return edits <= 2 && edits < Math.max(lower.length, candidate.length) ? 1 + edits : Number.POSITIVE_INFINITY;
  };
  const scored = names.map((name) => ({ name, score: score(name) })).filter((entry) => Number.isFinite(entry.score));
  if (scored.length === 0) return undefined;
  const best = Math.min(...scored.map((entry) => entry.score));
  const winners = scored.filter((entry) => entry.score === best);
  return winners.length === 1 ? winners[0].name : undefined;
}

/** Levenshtein distance (short names only: a template names one parameter). */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) current[j] = Math.min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    previous = current;
  }
  return previous[b.length];
}
