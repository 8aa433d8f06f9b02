import { describe, expect, it } from 'vitest';
import { AbortScope } from './abort-scope.js';

/** The smallest scope: aborted only by its owner; records when it is asked to listen. */
class Scope extends AbortScope {
  listens = 0;
  get isAborted(): boolean {
    return this.aborted;
  }
  get abortReason(): unknown {
    return this.aborted ? this.reason : undefined;
  }
  protected override listen(): void {
    this.listens++;
  }
  abort(reason: unknown): boolean {
    return this.abortScope(reason);
  }
}

describe('AbortScope', () => {
  it('tells every watcher once when it aborts, in the order they came', () => {
    const scope = new Scope();
    const told: string[] = [];
    scope.watchAbort(() => told.push('a'));
    scope.watchAbort({ handleEvent: () => told.push('b') });
    scope.watchAbort(() => told.push('c'));
    expect(scope.abort('stop')).toBe(true);
    expect(told).toEqual(['a', 'b', 'c']);
    scope.abort('again');
    expect(told).toEqual(['a', 'b', 'c']);
  });

  it('a watcher that left is not told', () => {
    const scope = new Scope();
    const told: string[] = [];
    const leaving = (): void => {
      told.push('left');
    };
    scope.watchAbort(leaving);
    scope.watchAbort(() => told.push('stayed'));
    scope.unwatchAbort(leaving);
    scope.abort('stop');
    expect(told).toEqual(['stayed']);
  });

  it('aborts once: a second abort does nothing, reports false, and the first reason sticks', () => {
    const scope = new Scope();
    const signal = scope.signal;
    expect(scope.abort('first')).toBe(true);
    expect(scope.abort('second')).toBe(false);
    expect(scope.abortReason).toBe('first');
    expect(signal.reason).toBe('first');
  });

  it('a signal first read after the abort is already aborted, with the reason', () => {
    const scope = new Scope();
    scope.abort('gone');
    expect(scope.signal.aborted).toBe(true);
    expect(scope.signal.reason).toBe('gone');
    expect(scope.listens).toBe(0);
  });

  it('is asked to listen when its signal is read or a watcher comes, never once it has aborted', () => {
    const scope = new Scope();
    void scope.signal;
    scope.watchAbort(() => {});
    expect(scope.listens).toBe(2);
    scope.abort('gone');
    let told = false;
    scope.watchAbort(() => {
      told = true;
    });
    expect(scope.listens).toBe(2);
    expect(told).toBe(false);
  });
});
