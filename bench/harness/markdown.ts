/**
 * A GitHub-flavoured markdown table. The first `textColumns` columns are left-aligned (labels,
 * settings), the rest right-aligned (figures).
 */
export function table(header: readonly string[], rows: ReadonlyArray<readonly string[]>, textColumns = 1): string {
  const align = header.map((_, i) => (i < textColumns ? ':--' : '--:'));
  return [header, align, ...rows].map((cells) => `| ${cells.join(' | ')} |`).join('\n');
}

/** Where the `## ` section starting at `start` ends (its `###` subsections belong to it). */
export function nextHeading(text: string, start: number): number {
  const next = text.indexOf('\n## ', start + 1);
  return next >= 0 ? next + 1 : text.length;
}

/** The first place one of `prefixes` occurs in `text` (its end when none does). */
export function firstOf(text: string, prefixes: string[]): number {
  const found = prefixes.map((prefix) => text.indexOf(prefix)).filter((i) => i >= 0);
  return found.length ? Math.min(...found) : text.length;
}
