/**
 * An intrusive doubly linked FIFO: push, shift and removal of any member are O(1) and allocate
 * nothing (the links live on the nodes). The one waiting room of bulwark: the bulkhead's callers
 * waiting for a slot and `rateLimiter.wait`'s callers waiting for quota queue in it (their
 * deadlines share one timer through a `DeadlineQueue`), so a caller that aborts or times out leaves
 * from the middle without a scan, unlike `Array.prototype.splice`/`shift`, whose cost grows with the
 * queue.
 */

/** A node of a {@link LinkedQueue}. The queue owns the three fields. */
export interface QueueNode {
  prevNode: QueueNode | undefined;
  nextNode: QueueNode | undefined;
  /** True while the node is in a queue: makes {@link LinkedQueue.remove} idempotent. */
  linked: boolean;
}

/** FIFO of nodes; a node belongs to at most one queue at a time. */
export class LinkedQueue<N extends QueueNode> {
  private head: N | undefined = undefined;
  private tail: N | undefined = undefined;
  private count = 0;

  /** Number of nodes in the queue. */
  get size(): number {
    return this.count;
  }

  /** The oldest node (the next {@link LinkedQueue.shift} returns it), or `undefined` when empty. */
  get first(): N | undefined {
    return this.head;
  }

  /** The node queued right after `node`, or `undefined` at the tail or when `node` is not queued. */
  after(node: N): N | undefined {
    return node.nextNode as N | undefined;
  }

  /** Appends `node` at the tail. The node must not be in a queue. */
  push(node: N): void {
    node.prevNode = this.tail;
    node.nextNode = undefined;
    node.linked = true;
    if (this.tail === undefined) this.head = node;
    else this.tail.nextNode = node;
    this.tail = node;
    this.count++;
  }

  /** Removes and returns the oldest node, or `undefined` when empty. */
  shift(): N | undefined {
    const node = this.head;
    if (node !== undefined) this.unlink(node);
    return node;
  }

  /** Removes `node` wherever it is. Returns false (and does nothing) when it is not queued. */
  remove(node: N): boolean {
    if (!node.linked) return false;
    this.unlink(node);
    return true;
  }

  private unlink(node: N): void {
    const prev = node.prevNode as N | undefined;
    const next = node.nextNode as N | undefined;
    if (prev === undefined) this.head = next;
    else prev.nextNode = next;
    if (next === undefined) this.tail = prev;
    else next.prevNode = prev;
    node.prevNode = undefined;
    node.nextNode = undefined;
    node.linked = false;
    this.count--;
  }
}
