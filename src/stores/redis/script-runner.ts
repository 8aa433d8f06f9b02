import type { StoreUnavailableError } from '../../core/errors.js';
import { show } from '../../core/validate.js';
import type { StatusSource, StoreDeadline } from './deadline.js';
import type { RedisScript, ScriptClient } from './script.js';

/** A Redis store's client: runs scripts and reports its connection status. */
export interface ScriptRunnerClient extends ScriptClient, StatusSource {}

/** The keys then the arguments of one script call; throws a `TypeError` for bad input. */
type KeysAndArgs = () => (string | number)[];

/**
 * How a Redis store runs its scripts: each call under the store set's deadline, in one promise
 * (no promise per layer), its reply read by the store. Bad input rejects with the `TypeError` the
 * store's `keysAndArgs` throws, before anything is sent or a deadline starts; Redis failing or
 * missing the deadline rejects with `StoreUnavailableError` (see `StoreDeadline`).
 */
export class ScriptRunner {
  constructor(
    private readonly client: ScriptRunnerClient,
    private readonly deadline: StoreDeadline,
  ) {}

  /**
   * Runs `script` on `keysAndArgs()` (its first `numKeys` are keys) and resolves what `read` makes
   * of the reply; what `read` throws (e.g. {@link unexpected}) is the rejection.
   */
  run<T>(
    script: RedisScript,
    numKeys: number,
    keysAndArgs: KeysAndArgs,
    read: (reply: unknown) => T,
  ): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const sent = keysAndArgs();
      const ticket = this.deadline.begin(this.client, reject);
      if (ticket === undefined) return;
      const failed = (error: unknown) => {
        // Stryker disable next-line ConditionalExpression: (true) past the deadline the promise was already rejected, and a second reject is ignored
        if (ticket.release()) reject(this.deadline.failure(error));
      };
      try {
        script.send(
          this.client,
          numKeys,
          sent,
          (reply) => {
            if (!ticket.release()) return;
            try {
              resolve(read(reply));
            } catch (error) {
              reject(error);
            }
          },
          failed,
        );
      } catch (error) {
        failed(error);
      }
    });
  }

  /**
   * Runs an owner's compare-and-set on one key, a script replying 1 (done: true) or 0 (not the
   * owner: false); any other reply is {@link unexpected}.
   */
  owned(what: string, script: RedisScript, keysAndArgs: KeysAndArgs): Promise<boolean> {
    return this.run(script, 1, keysAndArgs, (reply) => {
      if (reply === 1) return true;
      if (reply === 0) return false;
      throw this.unexpected(what, reply);
    });
  }

  /** The failure of a `what` script that replied out of shape (a `StoreUnavailableError`). */
  unexpected(what: string, reply: unknown): StoreUnavailableError {
    return this.deadline.failure(new TypeError(`unexpected ${what} script reply: ${show(reply)}`));
  }
}
