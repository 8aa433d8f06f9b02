import { describe, expect, it } from 'vitest';
import { isHealthCheck } from './skip.js';

describe('isHealthCheck', () => {
  it.each([
    ['/health', true],
    ['/healthz', true],
    ['/ready', true],
    ['/readyz?verbose', true],
    ['/livez', true],
    ['/live/', true],
    ['/health/db', true],
    ['/healthcheck', false],
    ['/api/health', false],
    ['/orders', false],
    ['', false],
    [undefined, false],
  ])('%s → %s', (url, expected) => {
    expect(isHealthCheck({ url })).toBe(expected);
  });

  it('a url that is not a string is never a health check, even one that prints as /health', () => {
    expect(isHealthCheck({ url: { toString: () => '/health' } } as never)).toBe(false);
    expect(isHealthCheck({ url: ['/healthz'] } as never)).toBe(false);
  });
});
