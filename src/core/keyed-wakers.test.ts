import { describe, expect, it } from 'vitest';
import { KeyedWakers } from './keyed-wakers.js';

describe('KeyedWakers', () => {
  it('wakes the wakers of one key only, in the order they were added', () => {
    const wakers = new KeyedWakers();
    const woken: string[] = [];
    wakers.add('a', () => woken.push('a1'));
    wakers.add('b', () => woken.push('b'));
    wakers.add('a', () => woken.push('a2'));
    wakers.wake('a');
    expect(woken).toEqual(['a1', 'a2']);
    wakers.wake('missing');
    expect(woken).toEqual(['a1', 'a2']);
  });

  it('the same function added twice is two wakers: each removal takes one', () => {
    const wakers = new KeyedWakers();
    let woken = 0;
    const wake = () => woken++;
    const first = wakers.add('k', wake);
    wakers.add('k', wake);
    wakers.wake('k');
    expect(woken).toBe(2);
    first();
    wakers.wake('k');
    expect(woken).toBe(3);
  });

  it('a key is forgotten with its last waker; a spent removal leaves a later waker alone', () => {
    const wakers = new KeyedWakers();
    const remove = wakers.add('k', () => {});
    expect(wakers.has('k')).toBe(true);
    expect(wakers.size).toBe(1);
    remove();
    expect(wakers.has('k')).toBe(false);
    expect(wakers.size).toBe(0);
    const again = wakers.add('k', () => {});
    remove(); // spent: it must not drop the new waker's key
    expect(wakers.has('k')).toBe(true);
    again();
    again();
    expect(wakers.size).toBe(0);
  });

  it('a waker that throws stops neither the others nor the caller', () => {
    const wakers = new KeyedWakers();
    const woken: string[] = [];
    wakers.add('k', () => {
      throw new Error('boom');
    });
    wakers.add('k', () => woken.push('after'));
    wakers.add('j', () => {
      throw new Error('boom');
    });
    wakers.add('j', () => woken.push('j'));
    expect(() => wakers.wake('k')).not.toThrow();
    expect(() => wakers.wakeAll()).not.toThrow();
    expect(woken).toEqual(['after', 'after', 'j']);
  });

  it('a waker may remove itself or another while being woken: every waker present at the start runs once', () => {
    const wakers = new KeyedWakers();
    const woken: string[] = [];
    let removeSecond = () => {};
    const removeFirst = wakers.add('k', () => {
      woken.push('first');
      removeFirst();
      removeSecond();
    });
    removeSecond = wakers.add('k', () => woken.push('second'));
    wakers.wake('k');
    expect(woken).toEqual(['first', 'second']);
    expect(wakers.size).toBe(0);
  });

  it('wakeAll wakes every key', () => {
    const wakers = new KeyedWakers();
    const woken: string[] = [];
    wakers.add('a', () => woken.push('a'));
    wakers.add('b', () => woken.push('b'));
    wakers.wakeAll();
    expect(woken.sort()).toEqual(['a', 'b']);
  });
});
