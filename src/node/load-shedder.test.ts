import { describe, expect, it, vi } from 'vitest';
import { isLoadShedError } from '../admission/errors.js';
import { FakeClock } from '../testing/fake-clock.js';
import { loadShedder } from './load-shedder.js';

describe('loadShedder (bulwark/node) uniform events', () => {
  it('takes name, onSuccess, onFailure and onRejected like the root factory', async () => {
    const clock = new FakeClock();
    const onSuccess = vi.fn();
    const onFailure = vi.fn();
    const onRejected = vi.fn();
    const shedder = loadShedder({
      name: 'edge',
      limits: { inFlight: 1 },
      clock,
      onSuccess,
      onFailure,
      onRejected,
    });
    try {
      expect(shedder.name).toBe('edge');
      await shedder.policy('critical').execute(() => 'ok');
      await shedder
        .policy('critical')
        .execute(() => Promise.reject(new Error('boom')))
        .catch(() => undefined);
      const release = shedder.admit('critical');
      expect(() => shedder.admit('critical')).toThrow();
      release();
      expect(onSuccess).toHaveBeenCalledWith({ policy: 'edge', durationMs: 0 });
      expect(onFailure).toHaveBeenCalledWith(expect.objectContaining({ policy: 'edge', handled: false }));
      expect(onRejected).toHaveBeenCalledTimes(1);
      const [event] = onRejected.mock.calls[0]!;
      expect(event).toMatchObject({ policy: 'edge', reason: 'shed' });
      expect(isLoadShedError(event.error)).toBe(true);
      expect(event.error).toMatchObject({ priority: 'critical', signal: 'inFlight', ratio: 1 });
    } finally {
      shedder.close();
    }
  });

  it('refuses a bad name and the old onShed option before opening any live reading', () => {
    expect(() => loadShedder({ limits: { eventLoopDelayMs: 100 }, name: '' })).toThrow(
      /"name" to be a non-empty string/,
    );
    expect(() => loadShedder({ limits: { eventLoopDelayMs: 100 }, onShed: () => {} } as never)).toThrow(
      /unknown option "onShed"/,
    );
  });
});
