/**
 * The outer edge shared by the admission policies' fast `execute` paths.
 */
import { neverAborted } from '../core/abort.js';
import type { Context, Operation } from '../core/context.js';
import { type ExecuteOptions, startContext } from '../core/policy.js';

// Calls made without options all get this one frozen context: no allocation per call.
const bareContext: Context = Object.freeze({ signal: neverAborted, attempt: 1 });

/**
 * Checks `execute`'s arguments like `startContext` (TypeError for a non-function operation or a
 * bad deadline) and returns the root context, shared when there are no options.
 */
export function edgeContext<T>(operation: Operation<T>, options: ExecuteOptions | undefined): Context {
  if (options === undefined && typeof operation === 'function') return bareContext;
  return startContext(operation, options);
}
