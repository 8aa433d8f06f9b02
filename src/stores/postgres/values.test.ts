import { describe, expect, it } from 'vitest';
import { isStoreUnavailableError } from '../../core/errors.js';
import { safeInteger } from './values.js';

describe('safeInteger', () => {
  it('reads a bigint as the database writes it as text, exactly', () => {
    expect(safeInteger('the fence', '0')).toBe(0);
    expect(safeInteger('the fence', '-42')).toBe(-42);
    expect(safeInteger('the fence', String(Number.MAX_SAFE_INTEGER))).toBe(Number.MAX_SAFE_INTEGER);
  });

  it('anything else is a store failure naming the value, never a number read loosely', () => {
    // Each of these Number() would read as a safe integer: only canonical bigint text is taken.
    for (const bad of [5, '1e3', ' 12', '12 ', '0x10', '+7', 'x12', '12x', '', '1.0', String(2 ** 53)]) {
      let error: unknown;
      try {
        safeInteger('PGlite: the fence', bad);
      } catch (caught) {
        error = caught;
      }
      expect(isStoreUnavailableError(error), JSON.stringify(bad)).toBe(true);
      expect((error as Error).message).toMatch(
        /^PGlite: the fence: expected a safe integer from the database, got /,
      );
    }
  });
});
