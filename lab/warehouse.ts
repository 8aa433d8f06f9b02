/**
 * The order's other collaborators: stock reservations and shipping, in memory, each keeping the
 * ground truth of what it did per order.
 */
import { ResilienceError } from '../src/index.js';

/** An address the courier never delivers to: the shipment step fails for good. */
export const UNDELIVERABLE = 'nowhere';

/** A stock reservation. */
export interface Reservation {
  readonly reservationId: string;
  readonly orderId: string;
}

/** What the warehouse did, per order id. */
export interface WarehouseLedger {
  /** Reservations still held (reserved and not released). */
  readonly held: ReadonlyMap<string, number>;
  /** Shipments booked. */
  readonly shipped: ReadonlyMap<string, number>;
}

/** Reservations and shipments of one build. */
export interface Warehouse {
  reserve(orderId: string): Promise<Reservation>;
  /** Releases a reservation; once, however often it is asked. */
  release(reservation: Reservation): Promise<void>;
  /** Books a shipment; fails with a permanent 422 for {@link UNDELIVERABLE}. */
  ship(orderId: string, address: string): Promise<string>;
  ledger(): WarehouseLedger;
}

const bump = (map: Map<string, number>, key: string, by: number) => map.set(key, (map.get(key) ?? 0) + by);

/**
 * A warehouse with endless stock and a courier that refuses one address.
 *
 * @example
 * const warehouse = createWarehouse();
 * const reservation = await warehouse.reserve('o-1');
 * await warehouse.ship('o-1', 'Main St 1');
 */
export function createWarehouse(): Warehouse {
  const held = new Map<string, number>();
  const shipped = new Map<string, number>();
  const live = new Set<string>();
  let sequence = 0;
  return {
    async reserve(orderId) {
      sequence++;
      const reservation = { reservationId: `r_${sequence}`, orderId };
      live.add(reservation.reservationId);
      bump(held, orderId, 1);
      return reservation;
    },
    async release(reservation) {
      if (!live.delete(reservation.reservationId)) return;
      bump(held, reservation.orderId, -1);
    },
    async ship(orderId, address) {
      if (address === UNDELIVERABLE) {
        throw new ResilienceError('the courier does not deliver to this address', {
          code: 'ERR_UNDELIVERABLE',
          kind: 'invalid',
          expose: true,
        });
      }
      bump(shipped, orderId, 1);
      return `shp_${orderId}`;
    },
    ledger: () => ({ held, shipped }),
  };
}
