import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson, parseStoredJson, sha256Hex, storedJson } from './json-codec.js';

describe('canonicalJson', () => {
  it('sorts keys at every depth, so key order never changes a fingerprint', () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { z: 1, y: 2 }], c: 'x' } })).toBe(
      '{"a":{"c":"x","d":[1,{"y":2,"z":1}]},"b":1}',
    );
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue()), (record) => {
        const reversed = Object.fromEntries(Object.entries(record).reverse());
        expect(canonicalJson(reversed)).toBe(canonicalJson(record));
      }),
    );
  });

  it('has one form per value: -0 is 0, undefined properties are absent, toJSON is honoured', () => {
    expect(canonicalJson(-0)).toBe('0');
    expect(canonicalJson({ a: undefined, b: 1 })).toBe(canonicalJson({ b: 1 }));
    expect(canonicalJson(new Date(0))).toBe('"1970-01-01T00:00:00.000Z"');
    expect(canonicalJson([1e21, 0.1, 'é\u2028'])).toBe(JSON.stringify([1e21, 0.1, 'é\u2028']));
  });

  it.each([
    ['undefined', undefined, /got undefined/],
    ['undefined in an array', [1, undefined], /value\[1\].*undefined/],
    ['NaN', { a: Number.NaN }, /value\.a.*NaN/],
    ['Infinity', Infinity, /Infinity/],
    ['a bigint', 1n, /a bigint/],
    ['a function', { f: () => 1 }, /a function/],
    ['a symbol', Symbol('s'), /a symbol/],
    ['a Map', new Map(), /a Map/],
    ['a Set', new Set(), /a Set/],
  ])('refuses %s with a TypeError naming where', (_what, value, message) => {
    expect(() => canonicalJson(value)).toThrow(TypeError);
    expect(() => canonicalJson(value)).toThrow(message);
    expect(() => storedJson(value)).toThrow(message);
  });

  it('refuses a cycle, but not the same object twice', () => {
    const shared = { x: 1 };
    expect(canonicalJson({ a: shared, b: shared })).toBe('{"a":{"x":1},"b":{"x":1}}');
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(() => canonicalJson(cyclic)).toThrow(/a cycle/);
  });
});

describe('storedJson and parseStoredJson', () => {
  it('round-trip any JSON value, keeping key order', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const back = parseStoredJson(storedJson(value));
        expect(back).toEqual(JSON.parse(JSON.stringify(value)));
      }),
    );
    expect(Object.keys(parseStoredJson(storedJson({ b: 1, a: 2 })) as object)).toEqual(['b', 'a']);
  });

  it('bytes survive as Uint8Array: Buffer, typed arrays (their own bytes only) and ArrayBuffer', () => {
    const buffer = Buffer.from([0, 255, 1, 128]);
    expect(parseStoredJson(storedJson({ body: buffer }))).toEqual({ body: new Uint8Array([0, 255, 1, 128]) });
    const view = new Uint16Array(new Uint8Array([1, 2, 3, 4, 5, 6]).buffer, 2, 1);
    expect(parseStoredJson(storedJson(view))).toEqual(new Uint8Array([3, 4]));
    expect(parseStoredJson(storedJson(new Uint8Array(100_000).fill(7).buffer))).toEqual(
      new Uint8Array(100_000).fill(7),
    );
    fc.assert(
      fc.property(fc.uint8Array(), (bytes) => {
        expect(parseStoredJson(storedJson([bytes]))).toEqual([new Uint8Array(bytes)]);
      }),
    );
  });

  it('an object that looks like bytes, or any $ key, comes back as it was', () => {
    const lookalike = { $bytes: 'AAAA' };
    expect(storedJson(lookalike)).toBe('{"$$bytes":"AAAA"}');
    expect(parseStoredJson(storedJson(lookalike))).toEqual(lookalike);
    expect(parseStoredJson(storedJson({ $$x: 1, $: 2, a$: 3 }))).toEqual({ $$x: 1, $: 2, a$: 3 });
  });

  it('a "__proto__" key stays a plain property', () => {
    const back = parseStoredJson('{"__proto__":{"polluted":true}}') as Record<string, unknown>;
    expect(Object.getPrototypeOf(back)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(back, '__proto__')).toMatchObject({
      enumerable: true,
      writable: true,
      configurable: true,
    });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe('sha256Hex', () => {
  it('is the SHA-256 of the UTF-8 text, in hex', async () => {
    expect(await sha256Hex('')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    expect(await sha256Hex('é')).toBe('4a99557e4033c3539de2eb65472017cad5f9557f7a0625a09f1c3f6e2ba69c4c');
  });
});
