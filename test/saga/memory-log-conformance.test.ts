/**
 * The saga log conformance suite against the in-memory log, the reference, on a `FakeClock`.
 */
import { describe, it } from 'vitest';
import { memorySagaLog } from '../../src/saga/memory-store.js';
import { FakeClock } from '../../src/testing/fake-clock.js';
import { sagaLogConformance } from '../../src/testing/saga-log-conformance.js';

sagaLogConformance(
  'memory log (FakeClock)',
  () => {
    const clock = new FakeClock(1_000_000);
    return { log: memorySagaLog({ clock }), elapse: (ms) => clock.advance(ms), slackMs: 0 };
  },
  { describe, it },
);
