/**
 * The subscribers of one notification channel, in both `Notifications` (pg's dedicated connection
 * and PGlite's `listen()`): who hears its payloads, and who is told each time its LISTEN took hold.
 */
import { callEach } from '../../core/call-each.js';

/** The subscribers of one channel (see the module doc). A throwing subscriber is ignored. */
export class ChannelSubscribers {
  private readonly hearing = new Set<(payload: string) => void>();
  private readonly told = new Set<() => void>();

  /** How many hear the channel's payloads. */
  get size(): number {
    return this.hearing.size;
  }

  /** Adds a subscriber (`onListening` optional); returns its removal. */
  add(onNotify: (payload: string) => void, onListening: (() => void) | undefined): () => void {
    this.hearing.add(onNotify);
    // Stryker disable next-line ConditionalExpression: (true) an undefined in the set throws when called, and callEach ignores a throw
    if (onListening !== undefined) this.told.add(onListening);
    return () => {
      this.hearing.delete(onNotify);
      // Stryker disable next-line ConditionalExpression: (true) deleting undefined from the set does nothing
      if (onListening !== undefined) this.told.delete(onListening);
    };
  }

  /** A notification on the channel. */
  notify(payload: string): void {
    callEach(this.hearing, (onNotify) => onNotify(payload));
  }

  /** The channel's LISTEN took hold: notifications sent before it were lost. */
  listening(): void {
    callEach(this.told, (onListening) => onListening());
  }
}
