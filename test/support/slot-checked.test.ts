/** The slot checker catches what a cluster would refuse with CROSSSLOT, and only that. */
import { expect, it } from 'vitest';
import { keySlotOf, slotChecked } from './slot-checked.js';

it('records a script call or del whose keys span two slots; one slot, or one key, is fine', async () => {
  const sent: unknown[][] = [];
  const fake = {
    evalsha: (...args: unknown[]) => Promise.resolve(sent.push(args)),
    eval: (...args: unknown[]) => Promise.resolve(sent.push(args)),
    del: (...args: unknown[]) => Promise.resolve(sent.push(args)),
    status: 'ready',
  };
  const { client, log } = slotChecked(fake);
  expect(keySlotOf('{user:1}a')).toBe(keySlotOf('{user:1}b'));
  expect(keySlotOf('{a}x')).not.toBe(keySlotOf('{b}x'));
  await client.evalsha('sha', 2, '{user:1}a', '{user:1}b', 'arg');
  await client.eval('return 1', 1, 'one', 'arg');
  await client.del('{a}x');
  expect(log.violations).toEqual([]);
  await client.evalsha('sha', 2, '{a}x', '{b}x', 'arg');
  await client.del('{a}x', '{b}x');
  expect(log.violations).toEqual(['evalsha ["{a}x","{b}x"]', 'del ["{a}x","{b}x"]']);
  expect(log).toMatchObject({ calls: 5, multiKeyCalls: 3 });
  expect(client.status).toBe('ready');
  expect(sent).toHaveLength(5); // every call still went through, arguments unchanged
  expect(sent[0]).toEqual(['sha', 2, '{user:1}a', '{user:1}b', 'arg']);
});
