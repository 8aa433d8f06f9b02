import { describe, expect, it } from 'vitest';
import { isDependencyFailureKind, isKind, isPermanentKind, isTransientKind, kinds } from './kind.js';

describe('kind sets', () => {
  it('sorts every kind into exactly one of transient, permanent, canceled or internal', () => {
    for (const kind of kinds) {
      const groups = [isTransientKind(kind), isPermanentKind(kind), kind === 'canceled', kind === 'internal'];
      expect(groups.filter(Boolean), kind).toHaveLength(1);
    }
    expect(kinds.filter(isPermanentKind)).toEqual([
      'invalid',
      'unauthorized',
      'forbidden',
      'not_found',
      'conflict',
    ]);
  });

  it("counts as a dependency's failure what says it is failing: transient kinds but rate limiting, and bugs", () => {
    expect(kinds.filter(isDependencyFailureKind)).toEqual([
      'transient',
      'timeout',
      'unavailable',
      'overloaded',
      'internal',
    ]);
  });

  it('knows the kinds and nothing else', () => {
    for (const kind of kinds) expect(isKind(kind)).toBe(true);
    for (const other of ['Transient', 'retry', '', undefined, 1, 'toString'])
      expect(isKind(other)).toBe(false);
  });
});
