import { COUNTERS, OutcomeWindow, REJECTIONS } from './window.js';

/** The mark of a refused call in a count window's ring (beside the marks of counted calls). */
const REFUSED = 0x80;

/** The largest count window: its ring is allocated up front. */
export const MAX_WINDOW_SIZE = 100_000;

/**
 * The last `size` calls (resilience4j's count-based window): a ring of their marks, with running
 * counts, so recording is O(1) and allocates nothing. A refused call takes a place too, so while
 * the circuit refuses, its rejections push older calls out; closing clears the window, so the rate
 * rules always judge the last `size` calls the closed circuit ran. With `trackLatency`, a second
 * ring keeps each call's latency, and `stats()` gives exact percentiles over the window.
 */
export class CountWindow extends OutcomeWindow {
  private readonly marks: Uint8Array;
  private readonly latencyMs: Float64Array | undefined;
  private readonly totals = new Float64Array(COUNTERS);
  private length = 0;
  private next = 0;

  constructor(
    private readonly size: number,
    trackLatency: boolean,
  ) {
    super();
    this.marks = new Uint8Array(size);
    this.latencyMs = trackLatency ? new Float64Array(size) : undefined;
  }

  record(marks: number, latencyMs: number): void {
    const slot = this.push(marks);
    if (this.latencyMs !== undefined) this.latencyMs[slot] = latencyMs;
  }

  reject(): void {
    this.push(REFUSED);
  }

  clear(): void {
    this.totals.fill(0);
    this.length = 0;
    this.next = 0;
  }

  protected add(counter: number, amount: number): void {
    this.totals[counter]! += amount;
  }

  protected total(counter: number): number {
    return this.totals[counter]!;
  }

  protected latencies(): Float64Array | undefined {
    const all = this.latencyMs;
    if (all === undefined) return undefined;
    const out = new Float64Array(this.length - this.totals[REJECTIONS]!);
    let n = 0;
    // Stryker disable next-line EqualityOperator: (slot <= this.length) the one place more can only write past the end of out, sized to the counted calls, which a typed array ignores; (slot >= this.length) and (=== REFUSED) are killed by the latency tests
    for (let slot = 0; slot < this.length; slot++) if (this.marks[slot] !== REFUSED) out[n++] = all[slot]!;
    return out;
  }

  /** Writes `marks` over the oldest place (taking its call out of the counts); returns the place. */
  private push(marks: number): number {
    const slot = this.next;
    if (this.length === this.size) this.tally(this.marks[slot]!, -1);
    else this.length++;
    this.marks[slot] = marks;
    this.tally(marks, 1);
    this.next = slot + 1 === this.size ? 0 : slot + 1;
    return slot;
  }

  private tally(marks: number, amount: number): void {
    if (marks === REFUSED) this.add(REJECTIONS, amount);
    else this.count(marks, amount);
  }
}
