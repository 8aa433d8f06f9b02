/**
 * ipKey as the key of the rate-limit adapters on real servers: node:http (the socket address;
 * `X-Forwarded-For` ignored), Express with and without `trust proxy`, Fastify with and without
 * `trustProxy`. Clients come from 127.0.0.1; the proxy header stands for the addresses behind it.
 */
import { createServer, type Server } from 'node:http';
import express, { type NextFunction, type Request, type Response } from 'express';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { startFastify } from '../../test/support/fastify-server.js';
import { listen } from '../../test/support/http-server.js';
import { rateLimiter } from '../rate-limit/rate-limiter.js';
import { FakeClock } from '../testing/fake-clock.js';
import { ipKey } from './ip-key.js';
import { fastifyRateLimit, rateLimitMiddleware } from './rate-limit.js';

const oneEach = () => rateLimiter({ limit: 1, periodMs: 60_000, clock: new FakeClock() });

/** Fetches `url` as if from behind a proxy for `client`; the status and the error text, if any. */
async function from(url: string, client?: string): Promise<string> {
  const res = await fetch(url, client === undefined ? {} : { headers: { 'x-forwarded-for': client } });
  return res.status === 500 ? `500 ${await res.text()}` : String(res.status);
}

/** An Express app limited by ipKey (`key`), with `trust proxy` set to `trust` when given. */
function expressApp(trust: string | undefined, key = (req: Request) => ipKey(req)): Server {
  const app = express();
  if (trust !== undefined) app.set('trust proxy', trust);
  app.use(rateLimitMiddleware({ limiter: oneEach(), key }));
  app.get('/', (_req, res) => {
    res.send('ok');
  });
  app.use((error: Error, _req: Request, res: Response, _next: NextFunction) => {
    res.status(500).send(error.message);
  });
  return createServer(app);
}

describe('ipKey on node:http', () => {
  it('keys by the socket address: a client cannot choose its key with X-Forwarded-For', async () => {
    const middleware = rateLimitMiddleware({ limiter: oneEach(), key: ipKey });
    const { url } = await listen(
      createServer((req, res) => middleware(req, res, (error?: unknown) => res.end(error ? 'error' : 'ok'))),
    );
    expect(await from(url, '198.51.100.1')).toBe('200');
    expect(await from(url, '198.51.100.2')).toBe('429');
    expect(await from(url)).toBe('429');
  });
});

describe('ipKey on Express', () => {
  it('an address that is not one (a header the trusted proxy passed on) fails the request: 500, never admitted', async () => {
    const { url } = await listen(expressApp('loopback'));
    for (const client of ['garbage', '203.0.113.7:5678', '[2001:db8::1]']) {
      expect(await from(url, client)).toMatch(
        /^500 ipKey: expected the client address to be an IPv4 or IPv6/,
      );
    }
  });

  it('without trust proxy: req.ip is the socket address, X-Forwarded-For is ignored', async () => {
    const { url } = await listen(expressApp(undefined));
    expect(await from(url, '198.51.100.1')).toBe('200');
    expect(await from(url, '198.51.100.2')).toBe('429');
  });

  it('with trust proxy: the client behind the proxy, IPv6 grouped by /56, mapped IPv4 as IPv4', async () => {
    const { url } = await listen(expressApp('loopback'));
    expect(await from(url, '2001:db8:0:100::1')).toBe('200');
    expect(await from(url, '2001:db8:0:1ff:ffff::9')).toBe('429'); // the same /56
    expect(await from(url, '2001:db8:0:200::1')).toBe('200'); // the next /56
    expect(await from(url, '203.0.113.7')).toBe('200');
    expect(await from(url, '::ffff:203.0.113.7')).toBe('429'); // the same IPv4 client
    expect(await from(url, '203.0.113.8')).toBe('200');
    expect(await from(url)).toBe('200'); // the proxy itself, 127.0.0.1
  });

  it('ipv6Subnet: false keys each IPv6 address on its own', async () => {
    const { url } = await listen(expressApp('loopback', (req) => ipKey(req, { ipv6Subnet: false })));
    expect(await from(url, '2001:db8:0:100::1')).toBe('200');
    expect(await from(url, '2001:db8:0:100::2')).toBe('200');
    expect(await from(url, '2001:DB8:0:100:0:0:0:1')).toBe('429'); // another spelling of the first
  });
});

describe('ipKey on Fastify', () => {
  async function fastifyApp(trustProxy: boolean): Promise<string> {
    const app = Fastify({ trustProxy });
    await app.register(fastifyRateLimit, { limiter: oneEach(), key: ipKey });
    app.get('/', async () => 'ok');
    return (await startFastify(app)).url;
  }

  it('without trustProxy: request.ip is the socket address, X-Forwarded-For is ignored', async () => {
    const url = await fastifyApp(false);
    expect(await from(url, '198.51.100.1')).toBe('200');
    expect(await from(url, '198.51.100.2')).toBe('429');
  });

  it('with trustProxy: the client behind the proxy, IPv6 grouped by /56', async () => {
    const url = await fastifyApp(true);
    expect(await from(url, '2001:db8:0:100::1')).toBe('200');
    expect(await from(url, '2001:db8:0:1ff::1')).toBe('429');
    expect(await from(url, '2001:db8:0:200::1')).toBe('200');
    expect(await from(url, '::ffff:203.0.113.7')).toBe('200');
    expect(await from(url, '203.0.113.7')).toBe('429');
    expect(await from(url, 'garbage')).toMatch(/^500 .*ipKey: expected the client address/);
  });
});
