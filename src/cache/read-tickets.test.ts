import { describe, expect, it } from 'vitest';
import { ReadTickets } from './read-tickets.js';

describe('ReadTickets', () => {
  it('marks the reads in flight of an invalidated key, and only those', () => {
    const tickets = new ReadTickets();
    const a1 = tickets.begin('a');
    const a2 = tickets.begin('a');
    const b = tickets.begin('b');
    tickets.invalidate('a');
    tickets.invalidate('never read');
    expect([a1.stale, a2.stale, b.stale]).toEqual([true, true, false]);
    tickets.invalidateAll();
    expect(b.stale).toBe(true);
    expect(tickets.begin('a').stale).toBe(false); // a read begun after is fresh
  });

  it('forgets a key with its last read; ending a read twice, or one never begun, changes nothing', () => {
    const tickets = new ReadTickets();
    const first = tickets.begin('k');
    const second = tickets.begin('k');
    tickets.end('k', first);
    expect(tickets.size).toBe(1);
    tickets.end('k', first);
    tickets.end('other', second);
    expect(tickets.size).toBe(1);
    tickets.end('k', second);
    expect(tickets.size).toBe(0);
    const late = tickets.begin('k');
    tickets.invalidate('k');
    expect(late.stale).toBe(true);
    expect(first.stale).toBe(false); // ended before: not marked
  });
});
