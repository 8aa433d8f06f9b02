/**
 * The routes' plumbing both builds share: a node:http server on 127.0.0.1 that runs the build's
 * middleware, reads and checks the JSON body, dispatches `POST /payments`, `POST /orders` and
 * `GET /accounts/:id` to the build, and answers every error as RFC 9457 problem+json.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { problemResponse } from '../../src/http/index.js';
import { isSagaFailedError, ResilienceError } from '../../src/index.js';
import { type Listening, listenOnLoopback } from '../listen.js';
import type { SeriesRecorder } from '../series.js';
import type { Build, OrderInput, PaymentInput } from './build.js';

/** A running API: its base URL and how to stop it. */
export type RunningApi = Listening;

const invalid = (message: string) =>
  new ResilienceError(message, { code: 'ERR_BAD_REQUEST', kind: 'invalid', expose: true });
const notFound = (message: string) =>
  new ResilienceError(message, { code: 'ERR_NOT_FOUND', kind: 'not_found', expose: true });

async function readBody(req: IncomingMessage & { body?: unknown }): Promise<unknown> {
  // The idempotency middleware has read the body already (a Buffer); otherwise read it here.
  let raw = req.body;
  if (!Buffer.isBuffer(raw)) {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    raw = Buffer.concat(chunks);
  }
  try {
    return JSON.parse((raw as Buffer).toString('utf8'));
  } catch {
    throw invalid('the body is not JSON');
  }
}

function fields<T>(body: unknown, shape: Record<keyof T, 'string' | 'number'>): T {
  if (typeof body !== 'object' || body === null) throw invalid('the body must be a JSON object');
  for (const [name, type] of Object.entries(shape)) {
    const value = (body as Record<string, unknown>)[name];
    if (typeof value !== type || value === '') throw invalid(`"${name}" must be a non-empty ${type}`);
  }
  return body as T;
}

const paymentShape = { paymentId: 'string', accountId: 'string', cents: 'number', card: 'string' } as const;
const orderShape = {
  orderId: 'string',
  sku: 'string',
  cents: 'number',
  card: 'string',
  address: 'string',
} as const;

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

async function route(build: Build, accounts: ReadonlySet<string>, req: IncomingMessage, res: ServerResponse) {
  const path = (req.url ?? '/').split('?')[0] ?? '/';
  if (req.method === 'POST' && path === '/payments') {
    const input = fields<PaymentInput>(await readBody(req), paymentShape);
    if (!accounts.has(input.accountId)) throw notFound('no such account');
    send(res, 201, await build.pay(input));
  } else if (req.method === 'POST' && path === '/orders') {
    send(res, 201, await build.order(fields<OrderInput>(await readBody(req), orderShape)));
  } else if (req.method === 'GET' && path.startsWith('/accounts/')) {
    const account = await build.account(decodeURIComponent(path.slice('/accounts/'.length)));
    if (account === undefined) throw notFound('no such account');
    send(res, 200, account);
  } else {
    throw notFound('no such route');
  }
}

function answerError(req: IncomingMessage, res: ServerResponse, error: unknown): void {
  // A failed saga answers as the step that failed (its compensations have run).
  const cause = isSagaFailedError(error) ? error.cause : error;
  if (res.headersSent) res.end();
  else problemResponse(res, cause, { instance: req.url ?? '/' });
}

/**
 * Starts `build` on its own port of 127.0.0.1. `accountIds` are the accounts that exist. Counts in
 * `series`, per answered request, whether it reached a route (`admitted`) or the middleware refused
 * it (429: `rate-limited`, 503: `shed`; an idempotent replay counts as admitted).
 *
 * @example
 * const api = await startApi(build, bank.accountIds);
 * await fetch(`${api.url}/accounts/acct-1`);
 * await api.close();
 */
export async function startApi(
  build: Build,
  accountIds: readonly string[],
  series: SeriesRecorder,
): Promise<RunningApi> {
  const accounts = new Set(accountIds);
  const server = createServer((req, res) => {
    let index = 0;
    let routed = false;
    res.once('finish', () => {
      if (!routed && res.statusCode === 429) series.count('rate-limited');
      else if (!routed && res.statusCode === 503) series.count('shed');
      else series.count('admitted');
    });
    const next = (error?: unknown): void => {
      if (error !== undefined) {
        answerError(req, res, error);
        return;
      }
      const middleware = build.middleware[index++];
      if (middleware !== undefined) middleware(req, res, next);
      else {
        routed = true;
        route(build, accounts, req, res).catch((failure: unknown) => answerError(req, res, failure));
      }
    };
    next();
  });
  return listenOnLoopback(server);
}
