import { describe, expect, it } from 'vitest';
import { deferred } from '../../test/support/deferred.js';
import { InvalidTransitionError, isInvalidTransitionError } from './errors.js';
import { transitionGuard } from './transition-guard.js';

type Status = 'pending' | 'paid' | 'shipped' | 'cancelled' | 'refunded';

interface Order {
  id: string;
  status: Status;
  customer: { name: string; address: { city: string } };
  lines: { sku: string; qty: number }[];
  notes?: string;
  [extra: string]: unknown;
}

const orders = () =>
  transitionGuard({
    field: 'status',
    transitions: {
      pending: ['paid', 'cancelled'],
      paid: ['shipped', 'refunded'],
      shipped: [],
      cancelled: [],
      refunded: [],
    },
  });

const anOrder = (status: Status = 'pending'): Order => ({
  id: 'o-1',
  status,
  customer: { name: 'Ada', address: { city: 'Lyon' } },
  lines: [{ sku: 'a', qty: 1 }],
  notes: 'fragile',
});

const settledWith = (promise: Promise<unknown>) =>
  promise.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );

describe('transitionGuard: a move the definition does not allow', () => {
  it('undoes every edit in place, nested ones, added and deleted keys included, and rejects with InvalidTransitionError', async () => {
    const order = anOrder('pending');
    const { customer, lines } = order;
    const { address } = customer;
    const line = lines[0]!;
    const before = structuredClone(order);

    const outcome = await settledWith(
      orders().run(order, (o) => {
        o.status = 'shipped';
        o.customer.name = 'Grace';
        o.customer.address.city = 'Paris';
        o.customer.address = { city: 'Berlin' };
        o.lines.push({ sku: 'b', qty: 2 });
        line.qty = 99;
        delete o.notes;
        o.trackingNumber = 'T-1';
        return 'sent';
      }),
    );

    expect(outcome).toEqual({ error: expect.any(InvalidTransitionError) });
    const error = (outcome as { error: InvalidTransitionError }).error;
    expect(error).toMatchObject({
      field: 'status',
      from: 'pending',
      to: 'shipped',
      kind: 'conflict',
      expose: true,
    });
    expect(error.message).toBe('"status" may not move from "pending" to "shipped"');
    expect(order).toStrictEqual(before);
    // The caller's references still point at the entity's objects, which hold their old data
    expect(order.customer).toBe(customer);
    expect(order.customer.address).toBe(address);
    expect(address.city).toBe('Lyon');
    expect(order.lines).toBe(lines);
    expect(order.lines[0]).toBe(line);
    expect(line.qty).toBe(1);
    expect('trackingNumber' in order).toBe(false);
  });

  it('a value that is no state, or a deleted field, is refused the same way, and not exposed', async () => {
    const guard = orders();
    for (const write of [
      (o: Order) => {
        o.status = 'lost' as Status;
      },
      (o: Order) => {
        delete (o as Partial<Order>).status;
      },
      (o: Order) => {
        (o as Record<string, unknown>).status = 3;
      },
    ]) {
      const order = anOrder('paid');
      const error = await guard.run(order, write).catch((e: unknown) => e);
      expect(isInvalidTransitionError(error)).toBe(true);
      expect((error as InvalidTransitionError).expose).toBe(false);
      expect(order).toStrictEqual(anOrder('paid'));
    }
  });

  it('a final state goes nowhere but itself', async () => {
    const order = anOrder('shipped');
    await expect(
      orders().run(order, (o) => {
        o.status = 'pending';
      }),
    ).rejects.toThrow('"status" may not move from "shipped" to "pending"');
    expect(order.status).toBe('shipped');
  });

  it('keeps the prototype of a class instance and of the class instances inside it', async () => {
    class Address {
      constructor(public city: string) {}
      label() {
        return `in ${this.city}`;
      }
    }
    class Shipment {
      status = 'pending';
      address = new Address('Lyon');
      isLate() {
        return false;
      }
    }
    const shipment = new Shipment();
    const address = shipment.address;
    const guard = transitionGuard({ field: 'status', transitions: { pending: ['done'], done: [] } });
    await expect(
      guard.run(shipment, (s) => {
        s.address.city = 'Paris';
        s.status = 'lost';
      }),
    ).rejects.toBeInstanceOf(InvalidTransitionError);
    expect(shipment).toBeInstanceOf(Shipment);
    expect(shipment.address).toBe(address);
    expect(shipment.address.label()).toBe('in Lyon');
  });
});

describe('transitionGuard: a handler that fails', () => {
  it('throwing synchronously: the entity is restored and the handler’s own error rejects the call', async () => {
    const order = anOrder('pending');
    const failure = new Error('payment declined');
    const call = orders().run(order, (o) => {
      o.status = 'paid';
      o.customer.name = 'Grace';
      throw failure;
    });
    await expect(call).rejects.toBe(failure);
    expect(order).toStrictEqual(anOrder('pending'));
  });

  it('rejecting later: restored once it rejects, the handler’s error passed on, even after a legal move', async () => {
    const order = anOrder('pending');
    const gate = deferred<void>();
    const failure = new Error('gateway timeout');
    const call = settledWith(
      orders().run(order, async (o) => {
        o.status = 'paid';
        o.lines.push({ sku: 'b', qty: 1 });
        await gate.promise;
        throw failure;
      }),
    );
    await null;
    expect(order.status).toBe('paid'); // the handler's edits are visible while it runs
    gate.resolve();
    expect(await call).toEqual({ error: failure });
    expect(order).toStrictEqual(anOrder('pending'));
  });

  it('a thrown non-error is passed on as it is', async () => {
    const order = anOrder();
    await expect(
      orders().run(order, () => {
        throw 'plain';
      }),
    ).rejects.toBe('plain');
  });
});

describe('transitionGuard: input refused before the handler runs', () => {
  const refused = async (entity: unknown, message: string | RegExp) => {
    let ran = false;
    const call = orders().run(entity as Order, () => {
      ran = true;
    });
    await expect(call).rejects.toThrow(message);
    await expect(call).rejects.toBeInstanceOf(TypeError);
    expect(ran).toBe(false);
  };

  it('a current state that is not in the definition', async () => {
    const order = { ...anOrder(), status: 'archived' };
    await refused(
      order,
      'expected "entity.status" to be a state (one of "pending", "paid", "shipped", "cancelled", "refunded"), got "archived"',
    );
    expect(order.status).toBe('archived');
  });

  it('no state field, or one the snapshot cannot hold: a getter, a non-enumerable property', async () => {
    await refused(
      { id: 1 },
      'expected "entity.status" to be an own enumerable data property, got no such own property',
    );
    class Getter {
      #status = 'pending';
      get status() {
        return this.#status;
      }
    }
    await refused(new Getter(), /got no such own property/);
    const own = Object.defineProperty({}, 'status', { get: () => 'pending', enumerable: true });
    await refused(own, /got an accessor or non-enumerable property/);
    const hidden = Object.defineProperty({}, 'status', { value: 'pending', enumerable: false });
    await refused(hidden, /got an accessor or non-enumerable property/);
  });

  it('an entity that is no ordinary object', async () => {
    await refused(null, 'expected "entity" to be an object, got null');
    await refused('pending', 'expected "entity" to be an object, got "pending"');
    await refused(['pending'], 'expected "entity" to be an object, got an array');
    const map = Object.assign(new Map(), { status: 'pending' });
    await refused(map, 'expected "entity" to be an ordinary object or class instance, got Map');
  });

  it('an entity structuredClone cannot copy: a function, a proxy; the clone error is the cause', async () => {
    await refused(
      { ...anOrder(), onChange: () => {} },
      /^expected "entity" to be data structuredClone can copy \(no functions, symbols or promises\): .*could not be cloned/,
    );
    await refused(new Proxy(anOrder(), {}), /could not be cloned/);
    const error = await orders()
      .run({ ...anOrder(), nested: { callback: () => 1 } }, () => {})
      .catch((e: unknown) => e);
    expect((error as Error).cause).toMatchObject({ name: 'DataCloneError' });
  });

  it('a getter that throws while the entity is copied: its error, unchanged', async () => {
    const failure = new Error('getter');
    const entity = Object.defineProperty({ status: 'pending' }, 'total', {
      get: () => {
        throw failure;
      },
      enumerable: true,
    });
    await expect(orders().run(entity, () => {})).rejects.toBe(failure);
  });

  it('a getter that throws null or undefined while the entity is copied: that, unchanged', async () => {
    for (const thrown of [null, undefined]) {
      let ran = false;
      const entity = Object.defineProperty({ status: 'pending' }, 'total', {
        get: () => {
          throw thrown;
        },
        enumerable: true,
      });
      const outcome = await orders()
        .run(entity, () => {
          ran = true;
        })
        .then(
          () => 'resolved',
          (error: unknown) => ({ rejected: error }),
        );
      expect(outcome).toStrictEqual({ rejected: thrown });
      expect(ran).toBe(false);
    }
  });

  it('a handler that is no function', async () => {
    await expect(orders().run(anOrder(), 'ship' as never)).rejects.toThrow(
      'expected "handler" to be a function, got "ship"',
    );
  });
});

describe('transitionGuard: allowed moves', () => {
  it('keeps every edit and resolves with the handler’s value', async () => {
    const order = anOrder('pending');
    const value = await orders().run(order, (o) => {
      o.status = 'paid';
      o.lines.push({ sku: 'b', qty: 1 });
      o.paidAt = 5;
      return o.id;
    });
    expect(value).toBe('o-1');
    expect(order).toMatchObject({ status: 'paid', paidAt: 5 });
    expect(order.lines).toHaveLength(2);
  });

  it('an async handler: the call settles when it does, with its value', async () => {
    const order = anOrder('paid');
    const gate = deferred<string>();
    const call = orders().run(order, async (o) => {
      const tracking = await gate.promise;
      o.status = 'shipped';
      o.tracking = tracking;
      return tracking;
    });
    let settled = false;
    void call.then(() => {
      settled = true;
    });
    await null;
    expect(settled).toBe(false);
    gate.resolve('T-1');
    expect(await call).toBe('T-1');
    expect(order).toMatchObject({ status: 'shipped', tracking: 'T-1' });
  });

  it('an async handler making a move not allowed is undone once it resolves', async () => {
    const order = anOrder('paid');
    const gate = deferred<void>();
    const call = settledWith(
      orders().run(order, async (o) => {
        o.status = 'pending';
        o.customer.address.city = 'Paris';
        await gate.promise;
      }),
    );
    await null;
    expect(order.customer.address.city).toBe('Paris');
    gate.resolve();
    expect(await call).toEqual({ error: expect.any(InvalidTransitionError) });
    expect(order).toStrictEqual(anOrder('paid'));
  });

  it('staying in the same state is no transition: allowed from any state, final ones included, edits kept', async () => {
    for (const status of ['pending', 'shipped'] as const) {
      const order = anOrder(status);
      await orders().run(order, (o) => {
        o.notes = 'edited';
      });
      expect(order).toMatchObject({ status, notes: 'edited' });
    }
    const order = anOrder('cancelled');
    await orders().run(order, (o) => {
      o.status = 'paid';
      o.status = 'cancelled'; // only where it ends counts
    });
    expect(order.status).toBe('cancelled');
  });

  it('always returns a promise, even for a synchronous handler, which runs at once', async () => {
    const order = anOrder();
    let ran = false;
    const call = orders().run(order, () => {
      ran = true;
      return 1;
    });
    expect(call).toBeInstanceOf(Promise);
    expect(ran).toBe(true);
    expect(await call).toBe(1);
  });

  it('one guard runs many entities, at once too', async () => {
    const guard = orders();
    const [a, b] = [anOrder('pending'), anOrder('pending')];
    const results = await Promise.all([
      settledWith(
        guard.run(a, async (o) => {
          o.status = 'paid';
        }),
      ),
      settledWith(
        guard.run(b, async (o) => {
          o.status = 'refunded';
        }),
      ),
    ]);
    expect(results[0]).toEqual({ value: undefined });
    expect(results[1]).toEqual({ error: expect.any(InvalidTransitionError) });
    expect([a.status, b.status]).toEqual(['paid', 'pending']);
  });
});

describe('transitionGuard: canTransition and next', () => {
  it('canTransition answers as run decides', () => {
    const guard = orders();
    expect(guard.canTransition('pending', 'paid')).toBe(true);
    expect(guard.canTransition('pending', 'shipped')).toBe(false);
    expect(guard.canTransition('shipped', 'shipped')).toBe(true);
    expect(guard.canTransition('paid', 'pending')).toBe(false);
  });

  it('next lists the targets in the order given, frozen; staying is not listed unless defined', () => {
    const guard = transitionGuard({ field: 'state', transitions: { open: ['open', 'closed'], closed: [] } });
    expect(guard.next('open')).toEqual(['open', 'closed']);
    expect(guard.next('closed')).toEqual([]);
    expect(Object.isFrozen(guard.next('open'))).toBe(true);
    expect(orders().next('paid')).toEqual(['shipped', 'refunded']);
  });

  it('a state that is not in the definition is a TypeError in both', () => {
    const guard = orders();
    expect(() => guard.next('archived' as Status)).toThrow(
      new TypeError(
        'expected "from" to be a state (one of "pending", "paid", "shipped", "cancelled", "refunded"), got "archived"',
      ),
    );
    expect(() => guard.canTransition('lost' as Status, 'paid')).toThrow(
      /expected "from" to be a state .*got "lost"/,
    );
    expect(() => guard.canTransition('paid', 'lost' as Status)).toThrow(
      /expected "to" to be a state .*got "lost"/,
    );
    expect(() => guard.canTransition('paid', 'paid' as Status)).not.toThrow();
    expect(() => guard.next(undefined as never)).toThrow(/got undefined$/);
  });

  it('carries its name and field', () => {
    expect(orders()).toMatchObject({ name: 'transition-guard', field: 'status' });
    const named = transitionGuard({ field: 'phase', transitions: { a: [] }, name: 'jobs' });
    expect(named).toMatchObject({ name: 'jobs', field: 'phase' });
  });
});

describe('transitionGuard: types', () => {
  it('a target that is no state, or a state unknown to a typed guard, does not compile', () => {
    const check = () => {
      // @ts-expect-error 'shiped' is not a state of the definition
      transitionGuard({ field: 'status', transitions: { pending: ['shiped'], paid: [] } });
      const guard = orders();
      // @ts-expect-error 'archived' is not a state
      guard.canTransition('pending', 'archived');
      // @ts-expect-error the entity has no 'status'
      void guard.run({ state: 'pending' }, () => {});
      const next: readonly Status[] = guard.next('pending');
      return next;
    };
    expect(check).toBeTypeOf('function');
  });

  it('a guard refuses a bad definition at construction', () => {
    expect(() =>
      transitionGuard({ field: 'status', transitions: { pending: ['paid', 'paid'], paid: [] } }),
    ).toThrow('"transitions.pending" lists "paid" twice');
  });
});
