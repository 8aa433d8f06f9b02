/**
 * Asking one of the user's request functions (`skip`, `key`, a bulkhead selector) inside an
 * adapter: its throw, or its promise's rejection, fails the request through the edge; its answer
 * goes on to the adapter's next step. Written once so no adapter repeats the try/catch and the
 * promise handling.
 */
import { isThenable } from '../core/policy.js';
import type { RequestHandler } from './adapter.js';
import type { Edge } from './edge.js';

/**
 * An adapter's next step with the answer to a question: a function created once per adapter (not
 * per request), receiving the request and its framework side. The answer comes from user code, so
 * it is `unknown`: the step checks it (and fails the request through the edge if it is wrong).
 */
export type Continuation<Req> = <Reply, Next>(
  answer: unknown,
  request: Req,
  reply: Reply,
  next: Next,
  edge: Edge<Reply, Next>,
) => void;

/**
 * Calls `question(request)` and hands its answer to `then`, synchronously when it answers with a
 * value. When it returns a promise: with `waits`, the promise's value goes to `then` once settled;
 * without, the promise itself does (for `then` to refuse: a promise is not an answer there). A
 * throw or a rejection goes to `edge.fail(next, error)` and `then` is not called. Allocates nothing
 * unless it has to wait.
 */
function ask<Req, Reply, Next>(
  question: (request: Req) => unknown,
  waits: boolean,
  then: Continuation<Req>,
  request: Req,
  reply: Reply,
  next: Next,
  edge: Edge<Reply, Next>,
): void {
  let answer: unknown;
  try {
    answer = question(request);
  } catch (error) {
    edge.fail(next, error);
    return;
  }
  if (waits && isThenable(answer)) {
    answer.then(
      (settled) => then(settled, request, reply, next, edge),
      (error: unknown) => edge.fail(next, error),
    );
  } else then(answer, request, reply, next, edge);
}

/** The request handler that asks `question` of each request and goes on with `then` (see {@link ask}). */
export function asking<Req>(
  question: (request: Req) => unknown,
  waits: boolean,
  then: Continuation<Req>,
): RequestHandler<Req> {
  return function askThenGoOn(request, reply, next, edge) {
    ask(question, waits, then, request, reply, next, edge);
  };
}
