import { describe, expect, it } from 'vitest';
import { replySafeInteger, replyText } from './values.js';

describe('replies read strictly', () => {
  it('an integer reply or a bulk string of digits is a non-negative safe integer', () => {
    expect(replySafeInteger(0)).toBe(0);
    expect(replySafeInteger(42)).toBe(42);
    expect(replySafeInteger(Number.MAX_SAFE_INTEGER)).toBe(Number.MAX_SAFE_INTEGER);
    expect(replySafeInteger('0')).toBe(0);
    expect(replySafeInteger('1735000000000000')).toBe(1_735_000_000_000_000);
    expect(replySafeInteger(Buffer.from('17'))).toBe(17);
  });

  it('anything else is undefined, never a number read loosely', () => {
    for (const bad of [
      -1,
      1.5,
      2 ** 53,
      Number.NaN,
      '',
      '-1',
      '1.5',
      '1e3',
      ' 1',
      '0x1',
      '9007199254740993',
      '12345678901234567',
      null,
      undefined,
      {},
    ]) {
      expect(replySafeInteger(bad), String(bad)).toBeUndefined();
    }
  });

  it('a bulk string reply is text; a Buffer is decoded as UTF-8', () => {
    expect(replyText('é')).toBe('é');
    expect(replyText(Buffer.from('é'))).toBe('é');
    expect(replyText(1)).toBeUndefined();
  });
});
