/**
 * A named pipeline: `pipeline({ name, clock }, ...policies)`. The options are told from a policy by
 * being a plain object without `execute`; they are checked like every factory's, and the policies
 * after them are numbered as arguments. What the name does in telemetry is in test/telemetry/.
 */
import { describe, expect, it } from 'vitest';
import { retry } from '../retry/retry.js';
import { FakeClock } from '../testing/fake-clock.js';
import { pipeline } from './pipeline.js';
import type { Policy } from './policy.js';

describe('pipeline options', () => {
  it('runs the policies after the options, outermost first, as without them', async () => {
    const order: string[] = [];
    const tag = (name: string): Policy => ({
      execute: async (operation, options) => {
        order.push(name);
        return operation({
          signal: options?.signal ?? new AbortController().signal,
          attempt: 1,
          deadline: undefined,
        });
      },
    });
    const named = pipeline({ name: 'checkout', clock: new FakeClock() }, tag('outer'), tag('inner'));
    expect(await named.execute(() => 'ok')).toBe('ok');
    expect(order).toEqual(['outer', 'inner']);
    expect(await pipeline({}).execute(() => 'bare')).toBe('bare');
  });

  it('refuses bad options with a TypeError naming them, and numbers the policies as arguments', () => {
    expect(() => pipeline({ name: '' })).toThrow(/"name"/);
    expect(() => pipeline({ name: 42 } as never)).toThrow(/"name"/);
    expect(() => pipeline({ clock: {} } as never)).toThrow(/"clock"/);
    expect(() => pipeline({ nmae: 'x' } as never)).toThrow(
      new TypeError('unknown option "nmae" in pipeline options; did you mean "name"?'),
    );
    expect(() => pipeline({ name: 'x' }, retry(), null as never)).toThrow(
      new TypeError('expected pipeline argument 3 to be a policy, got null'),
    );
    // An object with an execute that is not a function is a broken policy, not options.
    expect(() => pipeline({ execute: 'run' } as never)).toThrow(/argument 1 to be a policy/);
    // Only a plain object is options: an instance of a class (a Map, a Date, ...) is a bad policy.
    class Settings {
      name = 'checkout';
    }
    expect(() => pipeline(new Settings() as never)).toThrow(/argument 1 to be a policy/);
    expect(() => pipeline(new Map() as never)).toThrow(/argument 1 to be a policy/);
  });

  it('takes a null-prototype object as options too', async () => {
    const options: { name?: string } = Object.create(null);
    options.name = 'checkout';
    expect(await pipeline(options, retry({ maxAttempts: 1 })).execute(() => 'ok')).toBe('ok');
    expect(() => pipeline(Object.assign(Object.create(null), { nmae: 'x' }))).toThrow(/nmae/);
  });
});
