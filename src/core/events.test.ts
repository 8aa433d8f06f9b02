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

  it('rejects a non-function listener', () => {
    expect(() => new Listeners<number>().add(42 as never)).toThrow(TypeError);
  });

  it('restores the default handler', () => {
    setListenerErrorHandler(previous);
  });
});
