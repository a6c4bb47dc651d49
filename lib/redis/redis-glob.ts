/** A Redis glob (`*`, `?`, `[...]`, `\x`), as SCAN MATCH and KEYS read it, as a regular expression over whole strings. */
export function redisGlobToRegExp(glob: string): RegExp {
  let source = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i];
    if (c === '*') source += '.*';
    else if (c === '?') source += '.';
    else if (c === '\\' && i + 1 < glob.length) source += escapeRegExp(glob[++i]);
    else if (c === '[') {
      const close = glob.indexOf(']', i + 1);
      if (close === -1) source += '\\[';
      else {
        const body = glob.slice(i + 1, close).replace(/\\/g, '\\\\');
        source += body.startsWith('^') ? `[^${body.slice(1)}]` : `[${body}]`;
        i = close;
      }
    } else source += escapeRegExp(c);
  }
  return new RegExp(`^${source}$`, 's');
}

/** `text` with the characters a Redis glob gives a meaning escaped, so it matches only itself. */
export function escapeRedisGlob(text: string): string {
  return text.replace(/[*?[\]\\]/g, '\\$&');
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}
