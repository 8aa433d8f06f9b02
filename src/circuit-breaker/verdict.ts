/** What one call says about the dependency: the breaker's failure rule, by kind or `isFailure`. */
import { classify } from '../core/classify.js';
import type { Context } from '../core/context.js';
import { isDependencyFailureKind } from '../core/kind.js';
import { Mark } from './window.js';

/**
 * What one call turned out to say about the dependency: the {@link Mark}s of a counted call
 * (`SUCCESS`; `Failed`, with `TimedOut` for a timeout), or `NONE`.
 */
export type Verdict = number;
export const SUCCESS: Verdict = 0;
/** The caller left (or the call was canceled): no evidence either way. A bit apart from the marks. */
export const NONE: Verdict = 8;

/**
 * What a failed call says about the dependency. A call whose signal aborted is judged by the
 * abort's reason: a deadline that passed (an outer timeout, `AbortSignal.timeout()`) is a timeout
 * failure; any other abort is the caller's own cancel and says nothing.
 */
export function judge(
  error: unknown,
  context: Context,
  isFailure: ((error: unknown) => boolean) | undefined,
): Verdict {
  const signal = context.signal;
  if (!signal.aborted) return judgeError(error, isFailure);
  const reason: unknown = signal.reason;
  return classify(reason) === 'timeout' ? judgeError(reason, isFailure) : NONE;
}

/** What an error says about the dependency, by `isFailure` or by kind. */
function judgeError(error: unknown, isFailure: ((error: unknown) => boolean) | undefined): Verdict {
  const kind = classify(error);
  const failure = kind === 'timeout' ? Mark.Failed | Mark.TimedOut : Mark.Failed;
  if (isFailure !== undefined) {
    try {
      return isFailure(error) ? failure : SUCCESS;
    } catch {
      return failure; // a broken predicate must not hide failures
    }
  }
  // The dependency failed to answer; or it answered (a 4xx, a conflict): evidence it is up. A
  // cancellation is no evidence.
  if (isDependencyFailureKind(kind)) return failure;
  return kind === 'canceled' ? NONE : SUCCESS;
}
