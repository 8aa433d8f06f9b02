/**
 * Dedup and coalescing: the overhead of `Coalescer.do` and of a `dedup`ed action around a resolved
 * async no-op, beside a bare call and a hand-written singleflight (a `Map` of promises, deleted in
 * `finally`: the floor, with no per-caller cancellation). Alone (each call starts and ends its own
 * execution) and shared (ten callers of one key, one execution). There is no peer library to run
 * beside; the cache benchmark compares the coalesced load with bentocache's.
 */
import { Coalescer, dedup } from 'bulwark';
import { type Case, measureAll, overheadReport } from './support.js';

const noop = async () => 1;

/** The floor: a Map of in-flight promises, no cancellation, no events. */
function handWritten(): (key: string, fn: () => Promise<number>) => Promise<number> {
  const inFlight = new Map<string, Promise<number>>();
  return (key, fn) => {
    const running = inFlight.get(key);
    if (running !== undefined) return running;
    const started = fn().finally(() => inFlight.delete(key));
    inFlight.set(key, started);
    return started;
  };
}

const ten = <T>(call: () => Promise<T>) =>
  Promise.all([call(), call(), call(), call(), call(), call(), call(), call(), call(), call()]);

export default async function sharingBench(): Promise<string> {
  const coalescer = new Coalescer();
  const deduped = dedup(noop, { key: () => 'k' });
  const floor = handWritten();
  const signal = new AbortController().signal;
  const withSignal = { signal };
  const cases: Case[] = [
    { name: 'bare call', fn: () => noop() },
    { name: 'hand-written singleflight (Map + finally)', fn: () => floor('k', noop) },
    { name: 'Coalescer.do', fn: () => coalescer.do('k', noop) },
    { name: 'Coalescer.do with a signal', fn: () => coalescer.do('k', noop, withSignal) },
    { name: 'dedup', fn: () => deduped(undefined) },
    { name: 'ten callers: hand-written singleflight', fn: () => ten(() => floor('k', noop)) },
    { name: 'ten callers: Coalescer.do', fn: () => ten(() => coalescer.do('k', noop)) },
    {
      name: 'ten callers: Coalescer.do with signals',
      fn: () => ten(() => coalescer.do('k', noop, withSignal)),
    },
  ];
  const results = await measureAll(cases);
  const report = overheadReport('Dedup and coalescing (resolved async no-op)', results, [
    [
      'Coalescer.do ÷ hand-written singleflight',
      'Coalescer.do',
      'hand-written singleflight (Map + finally)',
      '—',
    ],
    ['dedup ÷ hand-written singleflight', 'dedup', 'hand-written singleflight (Map + finally)', '—'],
    [
      'ten callers, Coalescer ÷ hand-written',
      'ten callers: Coalescer.do',
      'ten callers: hand-written singleflight',
      '—',
    ],
  ]);
  console.log(report);
  return report;
}
