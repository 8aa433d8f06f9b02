import { afterEach, describe, expect, it, vi } from 'vitest';
import { Listeners, setListenerErrorHandler } from './events.js';

describe('Listeners', () => {
  const previous = setListenerErrorHandler(() => {});
  afterEach(() => {
    setListenerErrorHandler(() => {});
  });

  it('is inactive with no listener, so emitters can skip building the event', () => {
    const events = new Listeners<number>();
    expect(events.active).toBe(false);
    events.emit(1); // no-op
  });

  it('calls listeners in order and the disposer removes exactly one, idempotently', () => {
    const events = new Listeners<number>();
    const seen: string[] = [];
    const disposeA = events.add((n) => seen.push(`a${n}`));
    events.add((n) => seen.push(`b${n}`));
    events.emit(1);
    disposeA();
    disposeA();
    events.emit(2);
    expect(seen).toEqual(['a1', 'b1', 'b2']);
  });

  it('a throwing listener is reported and does not stop the others', () => {
    const reported: unknown[] = [];
    setListenerErrorHandler((error) => reported.push(error));
    const events = new Listeners<number>();
    const boom = new Error('listener bug');
    events.add(() => {
      throw boom;
    });
    const after = vi.fn();
    events.add(after);
    expect(() => events.emit(1)).not.toThrow();
    expect(after).toHaveBeenCalledWith(1);
    expect(reported).toEqual([boom]);
  });

  it('becomes inactive again when the last listener leaves', () => {
    const events = new Listeners<number>();
    const dispose = events.add(() => {});
    dispose();
    expect(events.active).toBe(false);
  });

  it('rejects a non-function listener with a TypeError showing what it got', () => {
    const events = new Listeners<number>();
    expect(() => events.add(42 as never)).toThrow(TypeError);
    expect(() => events.add(42 as never)).toThrow('expected the listener to be a function, got 42');
    expect(() => events.add('onRetry' as never)).toThrow(
      'expected the listener to be a function, got "onRetry"',
    );
    // A DOM-style listener object is not a listener here.
    expect(() => events.add({ handleEvent() {} } as never)).toThrow(
      'expected the listener to be a function, got [object Object]',
    );
    expect(events.active).toBe(false);
  });

  it('disposing a listener in the middle keeps the others, in order', () => {
    const events = new Listeners<number>();
    const seen: string[] = [];
    events.add((n) => seen.push(`a${n}`));
    const disposeB = events.add((n) => seen.push(`b${n}`));
    events.add((n) => seen.push(`c${n}`));
    disposeB();
    events.emit(1);
    expect(seen).toEqual(['a1', 'c1']);
  });

  it('a function subscribed twice is called twice; each disposer takes back one subscription', () => {
    const events = new Listeners<number>();
    const seen: number[] = [];
    const listener = (n: number) => seen.push(n);
    const first = events.add(listener);
    const second = events.add(listener);
    events.emit(1);
    first();
    events.emit(2);
    second();
    events.emit(3);
    expect(seen).toEqual([1, 1, 2]);
    expect(events.active).toBe(false);
  });

  it('a disposer called again after its listener subscribed anew leaves the new subscription alone', () => {
    const events = new Listeners<number>();
    const seen: number[] = [];
    const listener = (n: number) => seen.push(n);
    const first = events.add(listener);
    first();
    events.add(listener);
    first();
    events.emit(1);
    expect(seen).toEqual([1]);
  });

  it('by default reports a throwing listener to console.error, saying the call is unaffected', () => {
    const logged = vi.spyOn(console, 'error').mockImplementation(() => {});
    try {
      setListenerErrorHandler(previous);
      const events = new Listeners<number>();
      const boom = new Error('listener bug');
      events.add(() => {
        throw boom;
      });
      events.emit(1);
      expect(logged.mock.calls).toEqual([
        ['bulwark: an event listener threw; the call it observed is unaffected.', boom],
      ]);
    } finally {
      logged.mockRestore();
    }
  });

  it('setListenerErrorHandler returns the handler it replaced', () => {
    const mine = () => {};
    setListenerErrorHandler(mine);
    expect(setListenerErrorHandler(previous)).toBe(mine);
  });

  it('restores the default handler', () => {
    setListenerErrorHandler(previous);
  });
});
