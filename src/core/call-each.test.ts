import { describe, expect, it } from 'vitest';
import { callEach } from './call-each.js';

describe('callEach', () => {
  it('calls each item once, in order, past one that throws', () => {
    const called: number[] = [];
    callEach(new Set([1, 2, 3]), (n) => {
      called.push(n);
      if (n === 2) throw new Error('a listener bug');
    });
    expect(called).toEqual([1, 2, 3]);
  });

  it('calls the items there were when it began: one that unsubscribes and subscribes again is called once', () => {
    const listeners = new Set<() => void>();
    let calls = 0;
    const again = (): void => {
      calls += 1;
      listeners.delete(again);
      listeners.add(again);
    };
    listeners.add(again);
    listeners.add(() => listeners.add(() => (calls += 100)));
    callEach(listeners, (listener) => listener());
    expect(calls).toBe(1);
    expect(listeners.size).toBe(3);
  });
});
