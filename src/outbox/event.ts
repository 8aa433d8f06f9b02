/**
 * An event as every outbox stores it: checked once, before anything is written, so that each store
 * refuses the same events with the same `TypeError`.
 */
import { randomUUID } from 'node:crypto';
import { toJson } from '../core/json.js';
import { show, textValue } from '../core/validate.js';
import type { OutboxEvent } from './store.js';

/** An event, checked, with its new id and its payload and headers as JSON text. */
export interface ReadEvent {
  readonly id: string;
  readonly topic: string;
  readonly key: string | undefined;
  readonly payload: string;
  readonly headers: string;
}

/** JSON text a `jsonb` column takes: no `\u0000` escape (PostgreSQL's jsonb cannot hold U+0000). */
function jsonb(what: string, text: string): string {
  // An escape of U+0000 is a `\u0000` after an even number of backslashes (an odd one escapes the
  // backslash itself: the text `\\u0000` is a backslash then "u0000", which jsonb takes).
  // Stryker disable next-line Regex: (no ^) the text is JSON, which never starts with a backslash
  if (/(?:^|[^\\])(?:\\\\)*\\u0000/.test(text))
    throw new TypeError(`expected ${what} to contain no U+0000 (jsonb cannot hold it)`);
  return text;
}

/**
 * Checks `events` (a `TypeError` naming the first bad one: a topic or key that is not a non-empty
 * string without U+0000, a payload JSON would change or that is undefined, a header that is not a
 * string) and gives each a fresh UUID.
 */
export function readEvents(events: readonly OutboxEvent[]): ReadEvent[] {
  if (!Array.isArray(events)) throw new TypeError(`expected "events" to be an array, got ${show(events)}`);
  return events.map((event, i) => {
    if (event === null || typeof event !== 'object')
      throw new TypeError(`expected events[${i}] to be an object, got ${show(event)}`);
    const topic = textValue('topic', event.topic);
    const key = event.key === undefined ? undefined : textValue('key', event.key);
    const payload = toJson('the payload', event.payload);
    if (payload === undefined)
      throw new TypeError(`expected the payload of events[${i}] to be a JSON value, got undefined`);
    const headers = event.headers ?? {};
    if (typeof headers !== 'object')
      throw new TypeError(`expected the headers of events[${i}] to be an object, got ${show(headers)}`);
    for (const [name, value] of Object.entries(headers)) {
      textValue('header name', name);
      if (typeof value !== 'string')
        throw new TypeError(`expected header "${name}" to be a string, got ${show(value)}`);
    }
    return {
      id: randomUUID(),
      topic,
      key,
      payload: jsonb('the payload', payload),
      headers: jsonb('the headers', JSON.stringify(headers)),
    };
  });
}
