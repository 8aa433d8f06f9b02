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
});
