import { KeyTemplateError } from '../errors';
import type { RedissonNameRules } from '../layouts/redisson-name-rules';
import { REDISSON_TEMPLATE_NEEDS_PREFIX } from '../messages/redisson.messages';
import { parseKeyTemplate } from './key-template';
import type { LockedMethod } from './locked-method';

/**
 * Layout 'redisson' without a `nameMapper`, checked at bootstrap: a lock name is a bare Redis key
 * there, so each string key template of a decorated method must start with constant text (`'order:#id'`,
 * not `'#id'`), and that text must not already make every name refused (`'redisson_lock_token:#id'`).
 * A key function's names are checked at call time, as `run(name)`'s are (`RedissonNameRules`).
 * Throws a `KeyTemplateError` naming the decorator, class, method, template and the fix.
 */
export function checkRedissonKeyTemplates(locked: LockedMethod, rules: RedissonNameRules): void {
  for (const template of locked.templates ?? []) {
    const first = parseKeyTemplate(template)[0];
    const why = typeof first === 'string' ? rules.prefixRefusal(first) : undefined;
    if (typeof first !== 'string' || why !== undefined) {
      throw new KeyTemplateError(REDISSON_TEMPLATE_NEEDS_PREFIX(locked.decorator, locked.method, template, why));
    }
  }
}
