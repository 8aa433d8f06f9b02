/** Who a request is from: the `x-tenant` header both builds read. */
import type { IncomingMessage } from 'node:http';

/**
 * The request's tenant (`x-tenant`), or `'anonymous'` without one.
 *
 * @example
 * rateLimitMiddleware({ limiter, key: tenantOf });
 */
export function tenantOf(req: IncomingMessage): string {
  const tenant = req.headers['x-tenant'];
  return typeof tenant === 'string' && tenant !== '' ? tenant : 'anonymous';
}
