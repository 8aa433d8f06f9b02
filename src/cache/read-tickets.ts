/**
 * The reads in flight, by key, and whether each was overtaken by an invalidation: a read that began
 * before a `set`, `delete` or `clear` (here or in another process) must not write back what it read,
 * or it would bring the old value back.
 */

/** One read in flight: `stale` once an invalidation of its key came after it began. */
export interface ReadTicket {
  stale: boolean;
}

/** The tickets of the reads in flight; an idle cache holds nothing. */
export class ReadTickets {
  private readonly byKey = new Map<string, Set<ReadTicket>>();

  /** How many keys have reads in flight. */
  get size(): number {
    return this.byKey.size;
  }

  /** A read of `key` begins. */
  begin(key: string): ReadTicket {
    // Stryker disable next-line ObjectLiteral: ({}) an absent flag reads as false, as it should until an invalidation sets it
    const ticket: ReadTicket = { stale: false };
    let tickets = this.byKey.get(key);
    if (tickets === undefined) {
      tickets = new Set();
      this.byKey.set(key, tickets);
    }
    tickets.add(ticket);
    return ticket;
  }

  /** The read of `ticket` is over. */
  end(key: string, ticket: ReadTicket): void {
    const tickets = this.byKey.get(key);
    if (tickets?.delete(ticket) && tickets.size === 0) this.byKey.delete(key);
  }

  /** `key` was invalidated: its reads in flight are stale. */
  invalidate(key: string): void {
    const tickets = this.byKey.get(key);
    if (tickets !== undefined) for (const ticket of tickets) ticket.stale = true;
  }

  /** Everything was invalidated: every read in flight is stale. */
  invalidateAll(): void {
    for (const tickets of this.byKey.values()) for (const ticket of tickets) ticket.stale = true;
  }
}
