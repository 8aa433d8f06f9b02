import { describe, expect, it } from 'vitest';
import { takeSnapshot } from './snapshot.js';

class Money {
  constructor(
    public amount: number,
    public currency: string,
  ) {}
  format(): string {
    return `${this.amount} ${this.currency}`;
  }
}

describe('takeSnapshot: restore puts the data back into the same objects', () => {
  it('every nested object, array, Map, Set and Date, with keys added deleted and keys deleted set again', () => {
    const address = { city: 'Lyon', lines: ['1 rue A'] };
    const tags = new Set(['new']);
    const prices = new Map<string, { cents: number }>([['sku-1', { cents: 100 }]]);
    const at = new Date(1_000);
    const entity: Record<string, unknown> = { address, tags, prices, at, note: 'hi', gone: undefined };
    const price = prices.get('sku-1')!;
    const before = structuredClone(entity);
    const snapshot = takeSnapshot(entity);

    address.city = 'Paris';
    address.lines.push('2 rue B');
    (address as Record<string, unknown>).zip = '75001';
    tags.add('vip').delete('new');
    price.cents = 1;
    prices.set('sku-2', { cents: 2 });
    at.setTime(2_000);
    delete entity.note;
    delete entity.gone;
    entity.added = true;
    entity.address = { city: 'elsewhere' };
    snapshot.restore();

    expect(entity).toStrictEqual(before);
    expect(entity.address).toBe(address);
    expect(entity.tags).toBe(tags);
    expect(entity.prices).toBe(prices);
    expect(prices.get('sku-1')).toBe(price);
    expect(entity.at).toBe(at);
    expect(Object.hasOwn(entity, 'gone')).toBe(true);
  });

  it('keeps class instances at every depth, prototypes and identity', () => {
    const total = new Money(10, 'EUR');
    const order = { id: 1, total, lines: [new Money(5, 'EUR')] };
    const line = order.lines[0]!;
    const snapshot = takeSnapshot(order);
    total.amount = 99;
    order.lines[0] = new Money(0, 'USD');
    order.total = new Money(1, 'USD');
    snapshot.restore();
    expect(order.total).toBe(total);
    expect(order.total.format()).toBe('10 EUR');
    expect(order.lines[0]).toBe(line);
    expect(line).toBeInstanceOf(Money);
  });

  it('keeps shared references and cycles', () => {
    const shared = { n: 1 };
    const entity: Record<string, unknown> = { a: shared, b: shared };
    entity.self = entity;
    const snapshot = takeSnapshot(entity);
    entity.a = { n: 2 };
    shared.n = 3;
    entity.self = null;
    snapshot.restore();
    expect(entity.a).toBe(shared);
    expect(entity.b).toBe(shared);
    expect(entity.self).toBe(entity);
    expect(shared.n).toBe(1);
  });

  it('arrays: length, holes and extra keys come back', () => {
    // biome-ignore lint/suspicious/noSparseArray: the hole is part of what is restored
    const list: unknown[] & { label?: string } = [1, , 3];
    list.label = 'x';
    const snapshot = takeSnapshot({ list });
    list.length = 0;
    list[4] = 'late';
    delete list.label;
    snapshot.restore();
    // biome-ignore lint/suspicious/noSparseArray: as above
    expect([...list.entries()]).toEqual([...[1, , 3].entries()]);
    expect(1 in list).toBe(false);
    expect(list.label).toBe('x');
  });

  it('binary data comes back byte for byte; objects it cannot look into are kept by reference', () => {
    const bytes = new Uint8Array([1, 2, 3]);
    const pattern = /a/g;
    const failure = new Error('kept');
    const entity: Record<string, unknown> = { bytes, pattern, failure };
    const snapshot = takeSnapshot(entity);
    bytes[0] = 9;
    entity.pattern = /b/;
    entity.failure = null;
    snapshot.restore();
    expect([...bytes]).toEqual([1, 2, 3]);
    expect(entity.pattern).toBe(pattern);
    expect(entity.failure).toBe(failure);
  });

  it('an inherited setter never runs: a deleted key is defined back as an own data property', () => {
    const calls: unknown[] = [];
    class Tracked {
      set status(value: unknown) {
        calls.push(value);
      }
    }
    const entity = Object.defineProperty(new Tracked(), 'status', {
      value: 'a',
      writable: true,
      enumerable: true,
      configurable: true,
    }) as unknown as Record<string, unknown>;
    const snapshot = takeSnapshot(entity);
    delete entity.status;
    snapshot.restore();
    expect(calls).toEqual([]);
    expect(Object.getOwnPropertyDescriptor(entity, 'status')).toMatchObject({ value: 'a', enumerable: true });
  });

  it('leaves own accessors, symbol keys and non-enumerable properties as they are, and never throws on a frozen object', () => {
    let backing = 1;
    const hidden = Symbol('hidden');
    const entity: Record<PropertyKey, unknown> = { [hidden]: 1, inner: { n: 1 } };
    Object.defineProperty(entity, 'derived', {
      get: () => backing,
      set: (v: number) => {
        backing = v;
      },
      enumerable: true,
    });
    Object.defineProperty(entity, 'secret', { value: 1, writable: true, enumerable: false });
    const snapshot = takeSnapshot(entity);
    backing = 2;
    entity[hidden] = 2;
    entity.secret = 2;
    (entity.inner as { n: number }).n = 2;
    Object.freeze(entity.inner);
    expect(() => snapshot.restore()).not.toThrow();
    expect([entity.derived, entity[hidden], entity.secret, (entity.inner as { n: number }).n]).toEqual([
      2, 2, 2, 2,
    ]);
  });

  it('a property made read-only or turned into an accessor since is defined back', () => {
    const entity: Record<string, unknown> = { a: 1, b: 2 };
    const snapshot = takeSnapshot(entity);
    Object.defineProperty(entity, 'a', { value: 5, writable: false });
    Object.defineProperty(entity, 'b', { get: () => 7, enumerable: true, configurable: true });
    snapshot.restore();
    expect(Object.getOwnPropertyDescriptor(entity, 'a')).toMatchObject({ value: 1 });
    expect(Object.getOwnPropertyDescriptor(entity, 'b')).toEqual({
      value: 2,
      writable: true,
      enumerable: true,
      configurable: true,
    });
  });

  it('objects in a Set come back by their original reference', () => {
    const member = { id: 1 };
    const members = new Set([member]);
    const snapshot = takeSnapshot({ members });
    members.clear();
    member.id = 2;
    snapshot.restore();
    expect([...members]).toEqual([member]);
    expect([...members][0]).toBe(member);
    expect(member.id).toBe(1);
  });

  it('a configurable own accessor stays an accessor, and the data beside it comes back', () => {
    let backing = 1;
    const entity: Record<string, unknown> = { plain: 1 };
    Object.defineProperty(entity, 'derived', {
      get: () => backing,
      set: (v: number) => {
        backing = v;
      },
      enumerable: true,
      configurable: true,
    });
    const snapshot = takeSnapshot(entity);
    backing = 2;
    entity.plain = 2;
    snapshot.restore();
    expect(entity.plain).toBe(1);
    expect(Object.getOwnPropertyDescriptor(entity, 'derived')).toMatchObject({ enumerable: true });
    expect(Object.getOwnPropertyDescriptor(entity, 'derived')?.get).toBeTypeOf('function');
    expect(entity.derived).toBe(2);
  });

  it('a sealed object gets its values back (its properties stay as they are: non-configurable)', () => {
    const entity = Object.seal({ a: 1, b: { n: 1 } });
    const b = entity.b;
    const snapshot = takeSnapshot(entity);
    entity.a = 2;
    entity.b = { n: 2 };
    snapshot.restore();
    expect(entity.a).toBe(1);
    expect(entity.b).toBe(b);
    expect(Object.getOwnPropertyDescriptor(entity, 'a')).toEqual({
      value: 1,
      writable: true,
      enumerable: true,
      configurable: false,
    });
  });

  it('a buffer detached since is left as it is, even an empty one, and restore does not throw', () => {
    const bytes = new Uint8Array([1, 2, 3]);
    const empty = new Uint8Array(0);
    const buffer = new ArrayBuffer(0);
    const snapshot = takeSnapshot({ bytes, empty, buffer });
    for (const detached of [bytes.buffer, empty.buffer, buffer])
      structuredClone(detached, { transfer: [detached] });
    expect(() => snapshot.restore()).not.toThrow();
    expect([bytes.byteLength, empty.byteLength, buffer.byteLength]).toEqual([0, 0, 0]);
  });

  it('an object kept by reference is never looked into, even one that looks like an array', () => {
    let reads = 0;
    const failure = Object.defineProperty(new Error('kept'), 'length', {
      get: () => {
        reads += 1;
        return 2;
      },
    });
    const snapshot = takeSnapshot({ failure });
    snapshot.restore();
    expect(reads).toBe(0);
  });

  it('data changed by a getter while it is being copied: no throw, and what was copied is put back', () => {
    const tags = new Map([['k', 1]]);
    const entity = {
      a: 1,
      tags,
      get sweep() {
        delete (this as { a?: number }).a; // `a` was copied already
        tags.clear(); // and so was `tags`
        return 0;
      },
    };
    const snapshot = takeSnapshot(entity);
    expect(snapshot.data).toEqual({ a: 1, tags: new Map([['k', 1]]), sweep: 0 });
    tags.set('k', 2);
    expect(() => snapshot.restore()).not.toThrow();
    expect([...tags]).toEqual([['k', 1]]);
  });

  it('throws structuredClone’s DataCloneError for what it cannot copy: a function, a proxy', () => {
    const refused = expect.objectContaining({ name: 'DataCloneError' });
    expect(() => takeSnapshot({ callback: () => 1 })).toThrow(refused);
    expect(() => takeSnapshot({ inner: new Proxy({}, {}) })).toThrow(refused);
  });
});
