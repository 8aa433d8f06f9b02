/**
 * readEvents: the check every outbox makes before it writes anything, and what it gives each
 * event (a fresh id, the payload and headers as JSON text). Each refusal names the bad event.
 */
import { describe, expect, it } from 'vitest';
import { readEvents } from './event.js';
import type { OutboxEvent } from './store.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('readEvents', () => {
  it('gives each event a fresh UUID, its payload and headers as JSON text (none given, or null: `{}`), its key if any', () => {
    const read = readEvents([
      { topic: 'orders', key: 'o-1', payload: { total: 5, items: ['a'] }, headers: { trace: 't-1' } },
      { topic: 'orders', payload: null },
      { topic: 'audit', payload: 'text', headers: undefined },
      { topic: 'audit', payload: 0, headers: null as never },
    ]);
    expect(read.map(({ id: _, ...rest }) => rest)).toEqual([
      {
        topic: 'orders',
        key: 'o-1',
        payload: '{"total":5,"items":["a"]}',
        headers: '{"trace":"t-1"}',
      },
      { topic: 'orders', key: undefined, payload: 'null', headers: '{}' },
      { topic: 'audit', key: undefined, payload: '"text"', headers: '{}' },
      { topic: 'audit', key: undefined, payload: '0', headers: '{}' },
    ]);
    for (const { id } of read) expect(id).toMatch(UUID);
    expect(new Set(read.map((e) => e.id)).size).toBe(4);
    expect(readEvents([])).toEqual([]);
  });

  it.each([
    ['not an array', 'x', /^expected "events" to be an array, got "x"$/],
    ['a null event', [{ topic: 't', payload: 1 }, null], /^expected events\[1\] to be an object, got null$/],
    ['an event that is not an object', ['t'], /^expected events\[0\] to be an object, got "t"$/],
    ['an empty topic', [{ topic: '', payload: 1 }], /"topic" to be a non-empty string/],
    ['a key with U+0000', [{ topic: 't', key: 'a\u0000', payload: 1 }], /"key" to contain no U\+0000/],
    [
      'an undefined payload',
      [
        { topic: 't', payload: 1 },
        { topic: 't', payload: undefined },
      ],
      /^expected the payload of events\[1\] to be a JSON value, got undefined$/,
    ],
    [
      'a payload JSON would change',
      [{ topic: 't', payload: { at: new Date(0) } }],
      /the payload to be JSON-serialisable: the payload\.at is a Date/,
    ],
    [
      'headers that are not an object',
      [
        { topic: 't', payload: 1 },
        { topic: 't', payload: 1, headers: 'trace=1' },
      ],
      /^expected the headers of events\[1\] to be an object, got "trace=1"$/,
    ],
    [
      'headers that are a number',
      [{ topic: 't', payload: 1, headers: 7 }],
      /^expected the headers of events\[0\] to be an object, got 7$/,
    ],
    ['an empty header name', [{ topic: 't', payload: 1, headers: { '': 'v' } }], /"header name" to be/],
    [
      'a header that is not a string',
      [{ topic: 't', payload: 1, headers: { trace: 1 } }],
      /^expected header "trace" to be a string, got 1$/,
    ],
    [
      'U+0000 in the payload (jsonb cannot hold it)',
      [{ topic: 't', payload: { note: 'a\u0000b' } }],
      /^expected the payload to contain no U\+0000 \(jsonb cannot hold it\)$/,
    ],
    [
      'U+0000 in a header value (jsonb cannot hold it)',
      [{ topic: 't', payload: 1, headers: { trace: 'a\u0000b' } }],
      /^expected the headers to contain no U\+0000 \(jsonb cannot hold it\)$/,
    ],
  ])('refuses %s with a TypeError naming it', (_, events, message) => {
    expect(() => readEvents(events as unknown as OutboxEvent[])).toThrow(TypeError);
    expect(() => readEvents(events as unknown as OutboxEvent[])).toThrow(message);
  });
});

describe('readEvents: backslashes', () => {
  it('takes a literal backslash before "u0000" (jsonb holds it), refuses an escaped U+0000 after backslashes', () => {
    const [event] = readEvents([{ topic: 't', payload: { path: 'C:\\u0000dir', two: '\\\\u0000' } }]);
    expect(JSON.parse(event!.payload)).toEqual({ path: 'C:\\u0000dir', two: '\\\\u0000' });
    expect(() => readEvents([{ topic: 't', payload: '\\\u0000' }])).toThrow(/contain no U\+0000/);
  });
});
