/**
 * What the memory log adds to the conformance suite (test/saga/memory-log-conformance.test.ts):
 * retention, which a portable suite cannot wait out.
 */
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../testing/fake-clock.js';
import { memorySagaLog } from './memory-store.js';
import { SAGA_RETENTION_MS } from './store.js';

const lease = (id: string) => ({ name: 's', id, owner: 'o', leaseMs: 1_000 });

describe('memorySagaLog retention', () => {
  it('forgets completed and compensated runs once retained long enough; keeps runs that need attention', async () => {
    const clock = new FakeClock();
    const log = memorySagaLog({ clock });
    for (const [id, status] of [
      ['done', 'completed'],
      ['undone', 'compensated'],
      ['odd', 'attention'],
    ] as const) {
      await log.start(lease(id), '{}');
      await log.write(lease(id), { status });
    }
    await log.start(lease('open'), '{}');
    await clock.advance(SAGA_RETENTION_MS - 1);
    expect(await log.start(lease('done'), '{}')).toBe(false);
    await clock.advance(1);
    expect(await log.start(lease('done'), '{}')).toBe(true);
    expect(await log.start(lease('undone'), '{}')).toBe(true);
    expect(await log.start(lease('odd'), '{}')).toBe(false);
    expect(await log.start(lease('open'), '{}')).toBe(false);
  });

  it('forgets runs in the order they finished, the later ones kept', async () => {
    const clock = new FakeClock();
    const log = memorySagaLog({ clock });
    await log.start(lease('first'), '{}');
    await log.write(lease('first'), { status: 'completed' });
    await clock.advance(1_000);
    await log.start(lease('second'), '{}');
    await log.write(lease('second'), { status: 'completed' });
    await clock.advance(SAGA_RETENTION_MS - 500);
    expect(await log.start(lease('second'), '{}')).toBe(false);
    expect(await log.start(lease('first'), '{}')).toBe(true);
    await clock.advance(500);
    expect(await log.start(lease('second'), '{}')).toBe(true);
  });
});
