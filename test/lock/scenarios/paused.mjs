// The paused holder of the SIGSTOP test, under plain node on the built dist/ (forked with IPC by
// test/lock/paused-process.test.ts): acquires the lock, tells the parent its fence, and waits for
// "write" — the parent SIGSTOPs it meanwhile, past its lease, and lets a successor write. On
// "write" it writes its value with its old fence, ignoring its aborted signal (the pause may land
// between a check of the signal and the write, so the resource must refuse it), and reports.
import { Redis } from 'ioredis';
import { distributedLock, isLockLostError, isStaleFenceError } from '../../../dist/index.js';
import { redisStores } from '../../../dist/stores/redis/index.js';

const [redisUrl, prefix] = process.argv.slice(2);
const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
const stores = redisStores(redis, { prefix, timeoutMs: 100 });
const locks = distributedLock({ store: stores.lock });
const told = new Promise((resolve) => process.once('message', resolve));

let write = 'not attempted';
const outcome = await locks
  .withLock(
    'account',
    async ({ fence }) => {
      process.send({ holding: fence });
      await told;
      write = await stores.fence.write('balance', fence, 'written by the paused holder').then(
        () => 'accepted',
        (error) => (isStaleFenceError(error) ? 'stale' : `failed: ${error}`),
      );
    },
    { ttlMs: 1_000, waitMs: 0 },
  )
  .then(
    () => 'resolved',
    (error) => (isLockLostError(error) ? 'lock lost' : `rejected: ${error}`),
  );
process.send({ write, outcome });
await stores.close();
redis.disconnect();
process.disconnect();
