import { describe, expect, it } from 'vitest';
import { channelName, quoteIdent, schemaName } from './identifiers.js';

describe('identifiers', () => {
  it('quotes identifiers, doubling quotes', () => {
    expect(quoteIdent('bulwark')).toBe('"bulwark"');
    expect(quoteIdent('a "b"')).toBe('"a ""b"""');
  });

  it('takes schema names PostgreSQL keeps whole, and refuses the rest', () => {
    expect(schemaName('schema', 'Tenant A')).toBe('Tenant A');
    expect(schemaName('schema', 'é'.repeat(31))).toBe('é'.repeat(31)); // 62 bytes
    for (const bad of ['', 'é'.repeat(32), 'PG_x', 'a\u0000', 1, undefined]) {
      expect(() => schemaName('schema', bad)).toThrow(TypeError);
    }
  });

  it('derives short, distinct channels from schemas of any length', () => {
    const long = 'x'.repeat(63);
    expect(channelName(long, 'idempotency')).toMatch(/^bulwark_idempotency_[0-9a-f]{8}$/);
    expect(channelName('a', 'idempotency')).not.toBe(channelName('b', 'idempotency'));
    expect(channelName('a', 'idempotency')).toBe(channelName('a', 'idempotency'));
  });
});
