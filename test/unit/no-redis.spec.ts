import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The specs of test/unit run without Redis (fast, anywhere): none of them may use the helpers that
 * start redis-server or connect to one. A spec that needs Redis belongs in test/.
 */
describe('test/unit needs no Redis', () => {
  const specs = readdirSync(__dirname).filter((file) => file.endsWith('.spec.ts'));

  it.each(specs)('%s imports no Redis-starting test helper and builds no application', (file) => {
    const source = readFileSync(join(__dirname, file), 'utf8');
    const imports = [...source.matchAll(/from '([^']+)'/g)].map((match) => match[1]);
    expect(imports.filter((path) => path.startsWith('../support/') || path.startsWith('../fixtures/'))).toEqual([]);
    expect(imports).not.toContain('testcontainers');
    expect(imports).not.toContain('@nestjs/testing');
  });
});
