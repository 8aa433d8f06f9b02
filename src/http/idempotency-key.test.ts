import { describe, expect, it } from 'vitest';
import { MAX_KEY_LENGTH, parseIdempotencyKey } from './idempotency-key.js';

const key = (k: string) => ({ status: 'key', key: k });

describe('parseIdempotencyKey', () => {
  it.each([
    ['a bare token', 'abc-123', 'abc-123'],
    ['an sf-string', '"abc-123"', 'abc-123'],
    ['an sf-string with escapes', '"a\\"b\\\\c"', 'a"b\\c'],
    ['an sf-string with spaces inside', '"a b"', 'a b'],
    ['an sf-string with parameters (ignored)', '"abc";v=1', 'abc'],
    ['surrounding whitespace', ' \tabc ', 'abc'],
    ['the longest key', 'k'.repeat(MAX_KEY_LENGTH), 'k'.repeat(MAX_KEY_LENGTH)],
    ['the longest sf-string key', `"${'\\\\'.repeat(MAX_KEY_LENGTH)}"`, '\\'.repeat(MAX_KEY_LENGTH)],
    ['a single value in an array', ['abc'], 'abc'],
  ])('reads %s', (_what, header, expected) => {
    expect(parseIdempotencyKey(header)).toEqual(key(expected));
  });

  it('says missing for no header', () => {
    expect(parseIdempotencyKey(undefined)).toEqual({ status: 'missing' });
    expect(parseIdempotencyKey([])).toEqual({ status: 'missing' });
  });

  it.each([
    ['empty', '', /is empty$/],
    ['only whitespace', '  ', /is empty$/],
    ['an empty sf-string', '""', /is empty$/],
    ['too long', 'k'.repeat(MAX_KEY_LENGTH + 1), /longer than 255 characters/],
    ['a too long sf-string', `"${'k'.repeat(MAX_KEY_LENGTH + 1)}"`, /longer than 255 characters/],
    ['a tab inside', 'a\tb', /a control character \(U\+0009\)/],
    ['DEL', 'a\x7fb', /a control character \(U\+007F\)/],
    ['a control character in an sf-string', '"a\x01b"', /a control character \(U\+0001\)/],
    ['a space in a bare token', 'a b', /not visible ASCII \(U\+0020\)/],
    ['non-ASCII', 'clé', /not visible ASCII \(U\+00E9\)/],
    ['a bad escape', '"a\\nb"', /bad escape/],
    ['an unterminated string', '"abc', /not terminated/],
    ['a trailing backslash', '"abc\\', /bad escape/],
    ['characters after the string', '"abc"def', /after its string/],
    ['two headers', ['a', 'b'], /sent more than once/],
  ])('refuses %s', (_what, header, reason) => {
    const parsed = parseIdempotencyKey(header);
    expect(parsed.status).toBe('malformed');
    expect(parsed.status === 'malformed' ? parsed.reason : '').toMatch(reason);
  });

  it('never quotes the value in its reason', () => {
    const parsed = parseIdempotencyKey('secret\tvalue');
    expect(JSON.stringify(parsed)).not.toContain('secret');
  });
});

describe('parseIdempotencyKey: the edges of each character set', () => {
  it.each([
    ['a bare token of the first and last visible characters', '!abc~', '!abc~'],
    ['an sf-string of the first and last printable characters', '" a~"', ' a~'],
    ['a bare token with more than one trailing whitespace', 'abc \t ', 'abc'],
  ])('reads %s', (_what, header, expected) => {
    expect(parseIdempotencyKey(header)).toEqual(key(expected));
  });

  it.each([
    ['DEL in an sf-string', '"a\x7fb"', /a control character \(U\+007F\)/],
    ['non-ASCII in an sf-string', '"clé"', /not visible ASCII \(U\+00E9\)/],
  ])('refuses %s', (_what, header, reason) => {
    const parsed = parseIdempotencyKey(header);
    expect(parsed.status === 'malformed' ? parsed.reason : parsed.status).toMatch(reason);
  });
});
