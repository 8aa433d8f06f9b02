import { describe, expect, it } from 'vitest';
import type { Notifications } from './database.js';
import { KeyWatchers } from './key-watchers.js';

/** Notifications that record subscriptions and let the test deliver payloads. */
function notifications() {
  const subscribed: string[] = [];
  let deliver: (payload: string) => void = () => {};
  let listening: (() => void) | undefined;
  const source: Notifications = {
    subscribe: (channel, onNotify, onListening) => {
      subscribed.push(channel);
      deliver = onNotify;
      listening = onListening;
      return () => {};
    },
    close: async () => {},
  };
  return {
    source,
    subscribed,
    notify: (payload: string) => deliver(payload),
    /** The connection (re)started listening. */
    listening: () => listening?.(),
  };
}

describe('KeyWatchers', () => {
  it('listens once, on the first watch, and wakes only the watchers of the notified key', () => {
    const { source, subscribed, notify } = notifications();
    const watchers = new KeyWatchers(() => source, 'idem_wake');
    expect(subscribed).toEqual([]);
    const woken: string[] = [];
    watchers.watch('a', () => woken.push('a'));
    watchers.watch('b', () => woken.push('b'));
    expect(subscribed).toEqual(['idem_wake']);
    notify('a');
    expect(woken).toEqual(['a']);
    expect(watchers.watching('a')).toBe(true);
    expect(watchers.watching('c')).toBe(false);
  });

  it("the empty payload (a key too long to send) wakes every watcher; the key '' is not watched apart", () => {
    const { source, notify } = notifications();
    const watchers = new KeyWatchers(() => source, 'lock_wake');
    const woken: string[] = [];
    watchers.watch('a', () => woken.push('a'));
    watchers.watch('b', () => woken.push('b'));
    notify('');
    expect(woken.sort()).toEqual(['a', 'b']);
  });

  it('each time listening (re)starts, every watcher is woken: what was sent before the LISTEN is lost', () => {
    const { source, listening } = notifications();
    const watchers = new KeyWatchers(() => source, 'lock_wake');
    const woken: string[] = [];
    watchers.watch('a', () => woken.push('a'));
    const unwatchB = watchers.watch('b', () => woken.push('b'));
    listening();
    expect(woken.sort()).toEqual(['a', 'b']);
    unwatchB();
    listening(); // a reconnect
    expect(woken.sort()).toEqual(['a', 'a', 'b']);
  });

  it('a store that cannot listen leaves its watchers to poll: watch never throws', () => {
    const watchers = new KeyWatchers(() => {
      throw new Error('no LISTEN connection');
    }, 'c');
    expect(() => watchers.watch('k', () => {})()).not.toThrow();
  });
});
