import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LinkedQueue, type QueueNode } from './linked-queue.js';

class Node implements QueueNode {
  prevNode: QueueNode | undefined = undefined;
  nextNode: QueueNode | undefined = undefined;
  linked = false;
  constructor(readonly id: number) {}
}

function drain(queue: LinkedQueue<Node>): number[] {
  const ids: number[] = [];
  for (let node = queue.shift(); node !== undefined; node = queue.shift()) ids.push(node.id);
  return ids;
}

/** The ids from the oldest node on, without removing any. */
function walk(queue: LinkedQueue<Node>): number[] {
  const ids: number[] = [];
  for (let n = queue.first; n !== undefined; n = queue.after(n)) ids.push(n.id);
  return ids;
}

describe('LinkedQueue', () => {
  it('is FIFO, removes from head, middle and tail, and ignores nodes not queued', () => {
    const queue = new LinkedQueue<Node>();
    const nodes = [0, 1, 2, 3, 4].map((i) => new Node(i));
    for (const n of nodes) queue.push(n);
    expect(queue.remove(nodes[2]!)).toBe(true);
    expect(queue.remove(nodes[2]!)).toBe(false);
    expect(queue.remove(nodes[0]!)).toBe(true);
    expect(queue.remove(nodes[4]!)).toBe(true);
    expect(queue.size).toBe(2);
    expect(drain(queue)).toEqual([1, 3]);
    expect(queue.size).toBe(0);
    expect(queue.shift()).toBeUndefined();
    expect(queue.remove(nodes[1]!)).toBe(false);
    // a removed node can be queued again
    queue.push(nodes[2]!);
    expect(drain(queue)).toEqual([2]);
  });

  it('behaves like an array model under any sequence of push, shift and remove', () => {
    type Cmd = { op: 'push' } | { op: 'shift' } | { op: 'remove'; pick: number };
    const cmd: fc.Arbitrary<Cmd> = fc.oneof(
      fc.constant({ op: 'push' as const }),
      fc.constant({ op: 'shift' as const }),
      fc.record({ op: fc.constant('remove' as const), pick: fc.nat() }),
    );
    fc.assert(
      fc.property(fc.array(cmd, { maxLength: 200 }), (cmds) => {
        const queue = new LinkedQueue<Node>();
        const model: Node[] = [];
        const all: Node[] = [];
        for (const c of cmds) {
          if (c.op === 'push') {
            const node = new Node(all.length);
            all.push(node);
            queue.push(node);
            model.push(node);
          } else if (c.op === 'shift') {
            expect(queue.shift()).toBe(model.shift());
          } else if (all.length > 0) {
            const node = all[c.pick % all.length]!;
            const i = model.indexOf(node);
            expect(queue.remove(node)).toBe(i !== -1);
            if (i !== -1) model.splice(i, 1);
          }
          expect(queue.size).toBe(model.length);
          expect(walk(queue)).toEqual(model.map((n) => n.id));
        }
        expect(drain(queue)).toEqual(model.map((n) => n.id));
      }),
    );
  });
});

describe('LinkedQueue first and after', () => {
  it('walks the queue from the oldest node; a removed node has no successor', () => {
    const queue = new LinkedQueue<Node>();
    expect(queue.first).toBeUndefined();
    const nodes = [0, 1, 2, 3].map((i) => new Node(i));
    for (const n of nodes) queue.push(n);
    expect(walk(queue)).toEqual([0, 1, 2, 3]);
    queue.remove(nodes[1]!);
    expect(queue.after(nodes[0]!)).toBe(nodes[2]);
    expect(queue.after(nodes[1]!)).toBeUndefined();
    queue.shift();
    expect(queue.first).toBe(nodes[2]);
    expect(queue.after(nodes[3]!)).toBeUndefined();
  });
});
