/**
 * The assertion every HTTP test makes about a refusal or an error answer: one of bulwark's RFC 9457
 * problem responses, as node:http sends it.
 */
import { expect } from 'vitest';

/** What {@link expectProblem} checks. */
export interface ExpectedProblem {
  readonly status: number;
  /** The `Retry-After` header, exactly; `null` when there must be none. */
  readonly retryAfter: string | null;
  /** Fields the body must have (besides `status`, always checked). */
  readonly body?: Readonly<Record<string, unknown>> | undefined;
}

/**
 * Asserts that `response` has `expected.status`, the `application/problem+json` content type, the
 * expected `Retry-After`, and a body with that status and `expected.body`'s fields. Returns the body.
 */
export async function expectProblem(
  response: Response,
  expected: ExpectedProblem,
): Promise<Record<string, unknown>> {
  expect(response.status).toBe(expected.status);
  expect(response.headers.get('content-type')).toBe('application/problem+json');
  expect(response.headers.get('retry-after')).toBe(expected.retryAfter);
  const body = (await response.json()) as Record<string, unknown>;
  expect(body).toMatchObject({ status: expected.status, ...expected.body });
  return body;
}
