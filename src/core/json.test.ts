import { describe, expect, it } from 'vitest';
import { fromJson, toJson } from './json.js';

describe('toJson', () => {
  it('gives plain values back as JSON text; undefined as undefined', () => {
    expect(toJson('v', { s: 'a', n: 1.5, b: true, f: false, z: null, list: [1, 'x', null, [true]] })).toBe(
      '{"s":"a","n":1.5,"b":true,"f":false,"z":null,"list":[1,"x",null,[true]]}',
    );
    expect(toJson('v', undefined)).toBeUndefined();
    expect(toJson('v', { dropped: undefined, kept: 1 })).toBe('{"kept":1}');
    expect(toJson('v', Object.create(null))).toBe('{}');
  });

  it('names the first part JSON would change, wherever it is', () => {
    expect(() => toJson('v', { a: 1, b: () => 1 })).toThrow(
      'expected v to be JSON-serialisable: v.b is a function',
    );
    expect(() => toJson('v', [1, 2, Number.POSITIVE_INFINITY])).toThrow(
      'v[2] is Infinity (JSON has no such number)',
    );
    expect(() => toJson('v', { deep: [{ s: Symbol('x') }] })).toThrow('v.deep[0].s is Symbol(x)');
    expect(() => toJson('v', Object.create(Object.create(null)))).toThrow(
      'v is a class instance, not a plain object',
    );
    class Money {}
    expect(() => toJson('v', { m: new Money() })).toThrow('v.m is a Money, not a plain object or array');
    expect(() => toJson('v', true)).not.toThrow();
  });
});

describe('fromJson', () => {
  it('parses JSON text; undefined stays undefined', () => {
    expect(fromJson('{"a":[1]}')).toEqual({ a: [1] });
    expect(fromJson(undefined)).toBeUndefined();
  });
});
