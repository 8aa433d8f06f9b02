/**
 * PostgresInbox against a scripted transaction: bad input sends nothing, a row reaped between the
 * insert's collision and the read is inserted again, and driver errors reach the caller as raised.
 * The real databases are in test/postgres/inbox.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { isStoreUnavailableError } from '../../core/errors.js';
import { FakeClock } from '../../testing/fake-clock.js';
import type { Database, PostgresTransaction } from './database.js';
import { PostgresInbox } from './inbox.js';

type Answer = (text: string) => Promise<unknown[]>;

/** An inbox whose store database and the caller's transaction record what is sent to them. */
function scripted(answer: Answer = () => Promise.resolve([])) {
  const sent: string[] = [];
  const clock = new FakeClock();
  const db = {
    what: 'PostgreSQL',
    query: (text: string) => {
      sent.push(`db: ${text}`);
      return Promise.resolve([{ n: 0 }]);
    },
  } as unknown as Database;
  const tx: PostgresTransaction = {
    async query<R>(text: string) {
      sent.push(text.slice(0, text.indexOf(' ')));
      return { rows: (await answer(text)) as R[] };
    },
  };
  return { inbox: new PostgresInbox(db, 'bulwark', clock), tx, sent, clock };
}

const message = { consumer: 'c', messageId: 'm' };

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

describe('PostgresInbox', () => {
  it('bad input is a TypeError naming it, before any statement is sent or the reaper starts', async () => {
    const { inbox, tx, sent, clock } = scripted();
    const process = inbox.process.bind(inbox) as (...args: unknown[]) => Promise<unknown>;
    const handler = () => 1;
    const refusals: [unknown[], RegExp][] = [
      [[null, message, handler], /"client" to be your transaction/],
      [[{}, message, handler], /"client" to be your transaction/],
      [[tx, null, handler], /"inbox message" to be an options object/],
      [
        [tx, { ...message, fingerPrint: 'f' }, handler],
        /"fingerPrint" in inbox message; did you mean "fingerprint"/,
      ],
      [[tx, { ...message, consumer: '' }, handler], /"consumer" to be a non-empty string/],
      [[tx, { ...message, consumer: 'a\u0000b' }, handler], /"consumer" to contain no U\+0000/],
      [[tx, { ...message, messageId: '\uD800' }, handler], /"messageId" to be well-formed/],
      [[tx, { ...message, messageId: 7 }, handler], /"messageId" to be a non-empty string/],
      [[tx, { consumer: 'c' }, handler], /"messageId" to be a non-empty string, got undefined/],
      [[tx, { ...message, fingerprint: '' }, handler], /"fingerprint" to be a non-empty string/],
      [[tx, { ...message, fingerprint: 'f\u0000' }, handler], /"fingerprint" to contain no U\+0000/],
      [[tx, message, 'handler'], /"handler" to be a function/],
    ];
    for (const [args, why] of refusals) {
      const error = await rejection(process(...args));
      expect(error).toBeInstanceOf(TypeError);
      expect((error as Error).message).toMatch(why);
    }
    expect(sent).toEqual([]);
    expect(clock.pendingTimers).toBe(0);
  });

  it('a row reaped between the collision and the read: inserted again, and the handler runs once', async () => {
    const inserts = [[], [{ inserted: 1 }]];
    const { inbox, tx, sent } = scripted(async (text) => (text.startsWith('INSERT') ? inserts.shift()! : []));
    let runs = 0;
    const outcome = await inbox.process(tx, message, () => ++runs);
    expect(outcome).toEqual({ duplicate: false, result: 1 });
    expect(sent).toEqual(['INSERT', 'SELECT', 'INSERT', 'UPDATE']);
  });

  it('a row that keeps vanishing: StoreUnavailableError after two tries, the handler not run', async () => {
    const { inbox, tx, sent } = scripted();
    let ran = false;
    const error = await rejection(inbox.process(tx, message, () => (ran = true)));
    expect(isStoreUnavailableError(error)).toBe(true);
    expect((error as Error).message).toMatch(
      /PostgreSQL: the inbox row of a message kept vanishing \(2 attempts\)/,
    );
    expect(sent).toEqual(['INSERT', 'SELECT', 'INSERT', 'SELECT']);
    expect(ran).toBe(false);
  });

  it("a statement's error reaches the caller as the driver raised it (a serialization failure)", async () => {
    const serialization = Object.assign(new Error('could not serialize access'), { code: '40001' });
    const { inbox, tx } = scripted(() => Promise.reject(serialization));
    let ran = false;
    expect(await rejection(inbox.process(tx, message, () => (ran = true)))).toBe(serialization);
    expect(ran).toBe(false);
  });
});
