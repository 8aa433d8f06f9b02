/**
 * A client wrapper that checks, for every script call (`eval`, `evalsha`) and multi-key `del` made
 * through it, that all the keys hash to one Redis Cluster slot: a call that would get `CROSSSLOT`
 * on a cluster is recorded as a violation, even on a standalone server (which never complains).
 * Slots come from the `cluster-key-slot` package (what ioredis routes by), not from our own code.
 */
import { createRequire } from 'node:module';

const keySlot = createRequire(import.meta.url)('cluster-key-slot') as (key: string) => number;

/** The Redis Cluster slot of `key`, as ioredis routes it (`cluster-key-slot`). */
export function keySlotOf(key: string): number {
  return keySlot(key);
}

/** What the wrapper saw. */
export interface SlotLog {
  /** Calls checked, and among them those with more than one key. */
  calls: number;
  multiKeyCalls: number;
  /** One line per call whose keys span several slots: command and keys. */
  readonly violations: string[];
}

/** `client` with every script call and `del` checked (see the file comment); the rest passes through. */
export function slotChecked<C extends object>(client: C): { client: C; log: SlotLog } {
  const log: SlotLog = { calls: 0, multiKeyCalls: 0, violations: [] };
  const check = (command: string, keys: readonly unknown[]): void => {
    log.calls++;
    if (keys.length < 2) return;
    log.multiKeyCalls++;
    const slots = new Set(keys.map((key) => keySlot(String(key))));
    if (slots.size > 1) log.violations.push(`${command} ${JSON.stringify(keys)}`);
  };
  const wrapped = new Proxy(client, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== 'function') return value;
      if (property === 'eval' || property === 'evalsha') {
        return (script: string, numKeys: number, ...rest: unknown[]) => {
          check(String(property), rest.slice(0, Number(numKeys)));
          return value.call(target, script, numKeys, ...rest);
        };
      }
      if (property === 'del') {
        return (...keys: unknown[]) => {
          check('del', keys);
          return value.apply(target, keys);
        };
      }
      return value.bind(target);
    },
  });
  return { client: wrapped, log };
}
