/**
 * A GitHub-flavoured markdown table. The first `textColumns` columns are left-aligned (labels,
 * settings), the rest right-aligned (figures).
 */
export function table(header: readonly string[], rows: ReadonlyArray<readonly string[]>, textColumns = 1): string {
  const align = header.map((_, i) => (i < textColumns ? ':--' : '--:'));
  return [header, align, ...rows].map((cells) => `| ${cells.join(' | ')} |`).join('\n');
}
