/**
 * Kleppmann's schedule with a real process pause: a worker holds the lock (fence n) and is
 * SIGSTOPped past its lease; a successor acquires (n + 1) and writes through the fence; the worker
 * is SIGCONTed and writes with n: the write is refused, and the successor's value stays. On Redis,
 * the worker running the built dist/ under plain node.
 */
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { distributedLock } from '../../src/lock/lock.js';
import { redisStores } from '../../src/stores/redis/index.js';
import { useRedis } from '../support/services.js';

const redis = await useRedis();
const entry = fileURLToPath(new URL('./scenarios/paused.mjs', import.meta.url));

redis.describe('a holder paused past its lease (SIGSTOP)', () => {
  it('its late write with the old fence is refused; the successor’s write stays', async () => {
    const child = fork(entry, [redis.url, redis.prefix], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    try {
      const [holding] = (await once(child, 'message')) as [{ holding: number }];
      process.kill(child.pid!, 'SIGSTOP');
      await sleep(1_300); // past the 1 s lease
      const stores = redisStores(redis.client(), { prefix: redis.prefix });
      const successor = await distributedLock({ store: stores.lock }).withLock(
        'account',
        async ({ fence }) => {
          await stores.fence.write('balance', fence, 'written by the successor');
          return fence;
        },
        { waitMs: 0 },
      );
      expect(successor).toBeGreaterThan(holding.holding);
      const reported = once(child, 'message');
      process.kill(child.pid!, 'SIGCONT');
      child.send('write');
      const [result] = (await reported) as [{ write: string; outcome: string }];
      console.log(
        `paused holder (fence ${holding.holding}) after SIGCONT: write ${result.write}, call ${result.outcome}; successor fence ${successor}`,
      );
      expect(result).toEqual({ write: 'stale', outcome: 'lock lost' });
      expect((await stores.fence.read('balance'))?.value).toBe('written by the successor');
      await stores.close();
    } finally {
      child.kill('SIGKILL');
    }
  });
});
