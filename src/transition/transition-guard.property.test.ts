/**
 * Property test of `transitionGuard().run` over any definition, any entity (nested objects, arrays
 * with holes, a Map, a Date, a shared reference or a cycle) and any handler (edits anywhere, a
 * final state, synchronous or not, failing or not):
 *
 * - a handler that fails leaves the entity deep-equal to its snapshot, and its error rejects the call;
 * - otherwise, a move the definition allows (or staying) leaves the entity exactly as the handler
 *   left it, and resolves with the handler's value;
 * - a move it does not allow leaves the entity deep-equal to its snapshot and rejects with an
 *   `InvalidTransitionError` naming both states;
 * - after a restore, every object of the entity is the very object that was there before.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvalidTransitionError } from './errors.js';
import { transitionGuard } from './transition-guard.js';

const STATES = ['a', 'b', 'c', 'd', 'e'] as const;
const KEYS = ['k', 'm', '0', '1'] as const;
type Key = (typeof KEYS)[number];

const key = fc.constantFrom(...KEYS);
const leaf = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.string({ maxLength: 3 }),
  fc.boolean(),
  fc.constant(null),
  fc.constant(undefined),
);
const { value } = fc.letrec<{ value: unknown; object: Record<string, unknown>; array: unknown[] }>((tie) => ({
  value: fc.oneof({ depthSize: 'small' }, leaf, tie('object'), tie('array')),
  object: fc.dictionary(key, tie('value'), { maxKeys: 3, noNullPrototype: true }),
  array: fc.sparseArray(tie('value'), { maxLength: 3 }),
}));

/** Any definition over some of STATES: each state's targets, distinct, among its states. */
const definition = fc
  .uniqueArray(fc.constantFrom(...STATES), { minLength: 1, maxLength: STATES.length })
  .chain((states) =>
    fc
      .tuple(...states.map(() => fc.subarray(states)))
      .map((targets) => Object.fromEntries(states.map((state, i) => [state, targets[i]!]))),
  );

type Op =
  | { readonly kind: 'set'; readonly at: number; readonly key: Key; readonly value: unknown }
  | { readonly kind: 'delete'; readonly at: number; readonly key: Key }
  | { readonly kind: 'truncate'; readonly at: number }
  | { readonly kind: 'alias'; readonly at: number; readonly key: Key; readonly to: number }
  | { readonly kind: 'time'; readonly ms: number }
  | { readonly kind: 'map'; readonly key: Key; readonly value: unknown }
  | { readonly kind: 'status'; readonly to: string | undefined };

const at = fc.nat({ max: 20 });
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('set' as const), at, key, value }),
  fc.record({ kind: fc.constant('delete' as const), at, key }),
  fc.record({ kind: fc.constant('truncate' as const), at }),
  fc.record({ kind: fc.constant('alias' as const), at, key, to: at }),
  fc.record({ kind: fc.constant('time' as const), ms: fc.integer({ min: 0, max: 1e12 }) }),
  fc.record({ kind: fc.constant('map' as const), key, value }),
  fc.record({
    kind: fc.constant('status' as const),
    to: fc.option(fc.constantFrom(...STATES, 'unknown'), { nil: undefined }),
  }),
);

type Entity = Record<string, unknown> & { status: string; when: Date; index: Map<string, unknown> };

/** Every plain object and array reachable from the entity, in a fixed order, with a path to it. */
function containers(root: object): [string[], object][] {
  const found: [string[], object][] = [];
  const seen = new Set<object>();
  const visit = (node: unknown, path: string[]) => {
    if (typeof node !== 'object' || node === null || seen.has(node)) return;
    seen.add(node);
    if (node instanceof Map) {
      for (const [k, v] of node) visit(v, [...path, `map:${k}`]);
      return;
    }
    if (node instanceof Date) return;
    found.push([path, node]);
    for (const k of Object.keys(node)) visit((node as Record<string, unknown>)[k], [...path, k]);
  };
  visit(root, []);
  return found;
}

const resolve = (root: object, path: string[]): unknown =>
  path.reduce<unknown>(
    (node, step) =>
      step.startsWith('map:')
        ? (node as Map<string, unknown>).get(step.slice(4))
        : (node as Record<string, unknown>)[step],
    root,
  );

/** Applies one edit; the same edits on two equal entities leave them equal. */
function apply(entity: Entity, edit: Op): void {
  const all = containers(entity).map(([, node]) => node as Record<string, unknown>);
  const pick = (index: number) => all[index % all.length]!;
  switch (edit.kind) {
    case 'set':
      pick(edit.at)[edit.key] = structuredClone(edit.value);
      return;
    case 'delete':
      delete pick(edit.at)[edit.key];
      return;
    case 'truncate': {
      const target = pick(edit.at);
      if (Array.isArray(target)) target.length = 0;
      return;
    }
    case 'alias':
      pick(edit.at)[edit.key] = pick(edit.to);
      return;
    case 'time':
      entity.when.setTime(edit.ms);
      return;
    case 'map':
      entity.index.set(edit.key, structuredClone(edit.value));
      return;
    case 'status':
      if (edit.to === undefined) delete (entity as Partial<Entity>).status;
      else entity.status = edit.to;
      return;
  }
}

const scenario = fc.record({
  transitions: definition,
  start: fc.nat(),
  payload: value,
  shared: fc.boolean(),
  cycle: fc.boolean(),
  edits: fc.array(op, { maxLength: 8 }),
  async: fc.boolean(),
  fails: fc.boolean(),
});

describe('transitionGuard (property)', () => {
  it('after run, the entity is as the handler left it after an allowed move, and as it was otherwise', async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async (s) => {
        const states = Object.keys(s.transitions);
        const from = states[s.start % states.length]!;
        const guard = transitionGuard({ field: 'status', transitions: s.transitions });
        const entity: Entity = {
          status: from,
          payload: s.payload,
          when: new Date(0),
          index: new Map([['k', { n: 1 }]]),
        };
        if (s.shared) entity.twin = entity.payload;
        if (s.cycle) entity.self = entity;

        const snapshot = structuredClone(entity);
        const before = containers(entity);
        const model = structuredClone(entity);
        for (const edit of s.edits) apply(model, edit);
        const failure = new Error('handler failed');

        const outcome = await guard
          .run(entity, async (e) => {
            for (const [i, edit] of s.edits.entries()) {
              if (s.async && i === Math.floor(s.edits.length / 2)) await null;
              apply(e, edit);
            }
            if (s.fails) throw failure;
            return 'done';
          })
          .then(
            (result) => ({ result }),
            (error: unknown) => ({ error }),
          );

        const to = model.status;
        const allowed = to === from || (s.transitions[from] as readonly string[]).includes(to);
        if (!s.fails && allowed) {
          expect(outcome).toEqual({ result: 'done' });
          expect(entity).toStrictEqual(model);
          return;
        }
        expect(outcome).toEqual({ error: s.fails ? failure : expect.any(InvalidTransitionError) });
        if (!s.fails)
          expect((outcome as { error: InvalidTransitionError }).error).toMatchObject({ from, to });
        expect(entity).toStrictEqual(snapshot);
        for (const [path, node] of before) expect(resolve(entity, path)).toBe(node);
      }),
      { numRuns: 500 },
    );
  });
});
