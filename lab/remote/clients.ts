/**
 * A worker's view of the card processor and the warehouse served by the main process
 * (lab/remote/server.ts): the same interfaces as the in-process ones, errors revived with their
 * `status`, `code` and `kind`, so the builds cannot tell the difference.
 */
import { type Kind, ResilienceError } from '../../src/index.js';
import type { CardProcessor, Charge, ChargeRequest } from '../processor.js';
import type { Reservation, Warehouse } from '../warehouse.js';
import type { WireError } from './server.js';

function revive(error: WireError): Error {
  if (error.code !== undefined && error.kind !== undefined)
    return new ResilienceError(error.message, {
      code: error.code,
      kind: error.kind as Kind,
      expose: true,
    });
  return Object.assign(new Error(error.message), error.status === undefined ? {} : { status: error.status });
}

async function call<T>(url: string, path: string, args: unknown[], signal?: AbortSignal): Promise<T> {
  const response = await fetch(url + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(args),
    ...(signal === undefined ? {} : { signal }),
  });
  const body = (await response.json()) as { value?: T; error?: WireError };
  if (body.error !== undefined) throw revive(body.error);
  return body.value as T;
}

/** The processor at `url`: `charge` and `refund` (its ledger stays with the main process). */
export function remoteProcessor(url: string): Pick<CardProcessor, 'charge' | 'refund'> {
  return {
    charge: (request: ChargeRequest, signal?: AbortSignal) =>
      call<Charge>(url, '/processor/charge', [request], signal),
    refund: (charge: Charge, idempotencyKey: string) =>
      call<void>(url, '/processor/refund', [charge, idempotencyKey]),
  };
}

/** The warehouse at `url` (its ledger stays with the main process). */
export function remoteWarehouse(url: string): Omit<Warehouse, 'ledger'> {
  return {
    reserve: (orderId: string) => call<Reservation>(url, '/warehouse/reserve', [orderId]),
    release: (reservation: Reservation) => call<void>(url, '/warehouse/release', [reservation]),
    ship: (orderId: string, address: string) => call<string>(url, '/warehouse/ship', [orderId, address]),
  };
}
