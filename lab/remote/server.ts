/**
 * The card processor and the warehouse of a multi-worker run, served over HTTP from the main
 * process: every worker calls the same ones, so the ground truth (what was really charged, held
 * and shipped) stays in one place. `POST /<processor|warehouse>/<method>` with the arguments as a
 * JSON array; answers `{ value }` or `{ error }` (its message, `status`, `code` and `kind`). A call
 * whose caller hangs up is aborted, as the in-process processor is by its caller's signal.
 */
import { createServer, type IncomingMessage } from 'node:http';
import { type Listening, listenOnLoopback } from '../listen.js';
import type { CardProcessor } from '../processor.js';
import type { Warehouse } from '../warehouse.js';

/** A running ground-truth server. */
export type GroundTruthServer = Listening;

/** What an error carries over the wire. */
export interface WireError {
  readonly message: string;
  readonly status?: number;
  readonly code?: string;
  readonly kind?: string;
}

async function readJson(req: IncomingMessage): Promise<unknown[]> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown[];
}

const wireError = (error: unknown): WireError => {
  const { message, status, code, kind } = error as Partial<Record<string, unknown>>;
  return {
    message: typeof message === 'string' ? message : String(error),
    ...(typeof status === 'number' ? { status } : {}),
    ...(typeof code === 'string' ? { code } : {}),
    ...(typeof kind === 'string' ? { kind } : {}),
  };
};

/**
 * Serves `processor` and `warehouse` on a free port of 127.0.0.1.
 *
 * @example
 * const truth = await serveGroundTruth(processor, warehouse);
 * const remote = remoteProcessor(truth.url); // in a worker
 */
export async function serveGroundTruth(
  processor: CardProcessor,
  warehouse: Warehouse,
): Promise<GroundTruthServer> {
  const calls: Record<string, (args: unknown[], signal: AbortSignal) => Promise<unknown>> = {
    '/processor/charge': ([request], signal) => processor.charge(request as never, signal),
    '/processor/refund': ([charge, key]) => processor.refund(charge as never, key as string),
    '/warehouse/reserve': ([orderId]) => warehouse.reserve(orderId as string),
    '/warehouse/release': ([reservation]) => warehouse.release(reservation as never),
    '/warehouse/ship': ([orderId, address]) => warehouse.ship(orderId as string, address as string),
  };
  const server = createServer((req, res) => {
    const call = calls[req.url ?? ''];
    const hangUp = new AbortController();
    res.once('close', () => {
      if (!res.writableFinished) hangUp.abort();
    });
    const answer = (status: number, body: unknown) =>
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (call === undefined || req.method !== 'POST') {
      answer(404, { error: { message: `no such call: ${req.method} ${req.url}` } });
      return;
    }
    readJson(req)
      .then((args) => call(args, hangUp.signal))
      .then(
        (value) => answer(200, { value: value ?? null }),
        (error: unknown) => answer(500, { error: wireError(error) }),
      );
  });
  return listenOnLoopback(server);
}
