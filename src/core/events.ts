/**
 * The event design every pattern uses: a listener is a function; subscribing returns a disposer;
 * a throwing listener never breaks the call that emitted; with no listener, emitting costs one
 * property check (callers test {@link Listeners.active} before building the event object).
 */

/** A function called with one event. */
export type Listener<E> = (event: E) => void;

/** Removes the listener it was returned for. Calling it twice is harmless. */
export type Disposer = () => void;

/** Called when a listener throws; the default reports to `console.error`. */
let onListenerError: (error: unknown) => void = (error) => {
  console.error('bulwark: an event listener threw; the call it observed is unaffected.', error);
};

/**
 * Replaces the handler for errors thrown by event listeners (for example to route them to your
 * logger). Returns the previous handler.
 */
export function setListenerErrorHandler(handler: (error: unknown) => void): (error: unknown) => void {
  const previous = onListenerError;
  onListenerError = handler;
  return previous;
}

/** A list of listeners for one event. */
export class Listeners<E> {
  private list: Listener<E>[] | undefined;

  /** True when at least one listener is subscribed: build the event only then. */
  get active(): boolean {
    return this.list !== undefined;
  }

  /** Subscribes `listener`; the returned disposer unsubscribes it. */
  add(listener: Listener<E>): Disposer {
    if (typeof listener !== 'function') {
      throw new TypeError(`expected the listener to be a function, got ${describe(listener)}`);
    }
    // Copy on write: emitting while a listener unsubscribes stays consistent.
    this.list = this.list === undefined ? [listener] : [...this.list, listener];
    let disposed = false;
    return () => {
      if (disposed) return;
      disposed = true;
      // Takes out one copy of the listener: the same function subscribed twice keeps its other
      // subscription (each disposer removes one copy, so this one's copy is still in the list).
      const list = this.list!;
      const index = list.indexOf(listener);
      this.list = list.length === 1 ? undefined : [...list.slice(0, index), ...list.slice(index + 1)];
    };
  }

  /** Calls every listener with `event`; a listener that throws is reported and skipped. */
  emit(event: E): void {
    const list = this.list;
    if (list === undefined) return;
    for (const listener of list) {
      try {
        listener(event);
      } catch (error) {
        onListenerError(error);
      }
    }
  }
}

function describe(value: unknown): string {
  return typeof value === 'string' ? JSON.stringify(value) : String(value);
}
