/**
 * Test doubles for the Redis stores: a fake subscriber connection (what `client.duplicate()` gives
 * the wake-up subscriber) and a spy on a real client that records its script calls and duplicates.
 */
import { EventEmitter } from 'node:events';
import type { Redis } from 'ioredis';

/** A subscriber connection that connects, subscribes and unsubscribes at once, recording it all. */
export class FakeSubscriber extends EventEmitter {
  status = 'wait';
  subscribed: string[] = [];
  unsubscribed: string[] = [];
  disconnected = false;
  connect(): Promise<void> {
    this.status = 'ready';
    queueMicrotask(() => this.emit('ready'));
    return Promise.resolve();
  }
  subscribe(channel: string): Promise<number> {
    this.subscribed.push(channel);
    return Promise.resolve(1);
  }
  unsubscribe(channel: string): Promise<number> {
    this.unsubscribed.push(channel);
    return Promise.resolve(0);
  }
  disconnect(): void {
    this.disconnected = true;
    this.status = 'end';
  }
}

/** A client whose script calls and duplicates are recorded (the calls still go to Redis). */
export function countedClient(client: Redis): { client: Redis; calls: string[]; duplicates: Redis[] } {
  const calls: string[] = [];
  const duplicates: Redis[] = [];
  const proxy = new Proxy(client, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        if (property === 'eval' || property === 'evalsha') calls.push(property);
        const result = value.apply(target, args);
        if (property === 'duplicate') duplicates.push(result as Redis);
        return result;
      };
    },
  });
  return { client: proxy, calls, duplicates };
}
