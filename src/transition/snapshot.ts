/**
 * A snapshot of an object graph's data that can be put back into the very same objects. The data
 * is copied with `structuredClone`; each copied object is then paired with the original it came
 * from, so a restore writes into every original object in place (the root and every nested object,
 * array, Map, Set, Date and binary buffer) instead of swapping copies in. References held anywhere
 * stay valid, and class instances keep their prototypes at every depth.
 */

/** How a copied object is restored, from what `structuredClone` made of it. */
type Shape = 'record' | 'array' | 'map' | 'set' | 'date' | 'bytes' | 'opaque';

/** One original object, its copy, and how to put the copy's data back into it. */
interface Pair {
  readonly original: object;
  readonly copy: object;
  readonly shape: Shape;
  /** Own accessor properties at snapshot time: their values are derived, never written back. */
  readonly accessors: ReadonlySet<string> | undefined;
}

/** The data of an object graph at one moment, and the way back to it. */
export interface Snapshot {
  /** The copy of the root, as `structuredClone` made it. */
  readonly data: object;
  /**
   * Puts the data back: every original object reachable at snapshot time gets its own enumerable
   * properties (keys added since deleted, the others set again, nested objects by their original
   * reference), its entries (Map, Set), its time (Date) or its bytes back. Never throws for a
   * property it cannot write (frozen since, read-only): it leaves that one as it is.
   */
  restore(): void;
}

const isObject = (value: unknown): value is object => typeof value === 'object' && value !== null;

/** The copy is this realm's, made by `structuredClone`: its class says what the original held. */
function shapeOf(copy: object): Shape {
  if (Array.isArray(copy)) return 'array';
  if (Object.getPrototypeOf(copy) === Object.prototype) return 'record';
  if (copy instanceof Map) return 'map';
  if (copy instanceof Set) return 'set';
  if (copy instanceof Date) return 'date';
  if (ArrayBuffer.isView(copy) || copy instanceof ArrayBuffer) return 'bytes';
  // Stryker disable next-line StringLiteral: no case of restorePair names 'opaque': any other name is left alone the same way
  return 'opaque'; // RegExp, Error, boxed primitives, Blob: kept by reference, their contents as they are
}

/**
 * Copies `root` with `structuredClone` (which throws its `DataCloneError` for what it cannot copy:
 * a function, a symbol, a promise, a WeakMap, ...) and pairs every copied object with its original.
 */
export function takeSnapshot(root: object): Snapshot {
  const data = structuredClone(root);
  const pairs = new Map<object, Pair>(); // by copy; structuredClone keeps shared references and cycles
  const stack: [object, object][] = [[root, data]];
  while (stack.length > 0) {
    const [original, copy] = stack.pop()!;
    if (pairs.has(copy)) continue;
    const shape = shapeOf(copy);
    let accessors: Set<string> | undefined;
    const follow = (from: unknown, to: unknown) => {
      if (isObject(to)) stack.push([from as object, to]);
    };
    if (shape === 'record' || shape === 'array') {
      for (const key of Object.keys(copy)) {
        const own = Object.getOwnPropertyDescriptor(original, key);
        if (own === undefined || !('value' in own)) {
          accessors ??= new Set();
          accessors.add(key);
        } else {
          follow(own.value, (copy as Record<string, unknown>)[key]);
        }
      }
    } else if (shape === 'map' || shape === 'set') {
      // Same entries in the same order: the copy was made a moment ago
      const entries = (shape === 'map' ? Map : Set).prototype.entries as (
        this: object,
      ) => Iterable<unknown[]>;
      const originals = [...entries.call(original)];
      const copies = [...entries.call(copy)];
      copies.forEach(([key, value], index) => {
        follow(originals[index]?.[0], key);
        follow(originals[index]?.[1], value);
      });
    }
    pairs.set(copy, { original, copy, shape, accessors });
  }
  return {
    data,
    restore() {
      // Every object of the copy that is put back was paired above: every one under a data property or in
      // a Map or Set. (What lies under an accessor or inside an opaque object was not, and is never put back.)
      const back = (value: unknown) => (isObject(value) ? pairs.get(value)!.original : value);
      for (const pair of pairs.values()) restorePair(pair, back);
    },
  };
}

function restorePair({ original, copy, shape, accessors }: Pair, back: (value: unknown) => unknown): void {
  switch (shape) {
    case 'array':
      Reflect.set(original, 'length', (copy as unknown[]).length);
      restoreRecord(original, copy, accessors, back); // its indices and any other keys
      return;
    case 'record':
      restoreRecord(original, copy, accessors, back);
      return;
    case 'map':
      Map.prototype.clear.call(original);
      for (const [key, value] of copy as Map<unknown, unknown>)
        Map.prototype.set.call(original, back(key), back(value));
      return;
    case 'set':
      Set.prototype.clear.call(original);
      for (const value of copy as Set<unknown>) Set.prototype.add.call(original, back(value));
      return;
    case 'date':
      Date.prototype.setTime.call(original, (copy as Date).getTime());
      return;
    case 'bytes':
      copyBytes(original as ArrayBufferLike | ArrayBufferView, copy as ArrayBuffer | ArrayBufferView);
      return;
    // 'opaque': kept as it is
  }
}

/** Deletes the keys added since the snapshot and sets the others back (accessors aside). */
function restoreRecord(
  original: object,
  copy: object,
  accessors: ReadonlySet<string> | undefined,
  back: (value: unknown) => unknown,
): void {
  for (const key of Object.keys(original)) {
    if (!Object.hasOwn(copy, key)) Reflect.deleteProperty(original, key);
  }
  for (const key of Object.keys(copy)) {
    if (accessors?.has(key) !== true) put(original, key, back((copy as Record<string, unknown>)[key]));
  }
}

/**
 * Sets one own property back, only if it changed. A definition, not an assignment: an inherited
 * setter must not run, and a property the handler made read-only gets its value back too. (A proxy
 * never gets here: `structuredClone` refuses to copy one.)
 */
function put(target: object, key: string, value: unknown): void {
  const own = Object.getOwnPropertyDescriptor(target, key);
  if (own !== undefined && 'value' in own) {
    // Stryker disable next-line ConditionalExpression: (true) defining the same value again changes nothing, even where the property is read-only (the same value is allowed); the check only skips that work. (false), never setting it back, would be killed
    if (!Object.is(own.value, value)) Reflect.defineProperty(target, key, { value });
  } else {
    Reflect.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true });
  }
}

function copyBytes(original: ArrayBufferLike | ArrayBufferView, copy: ArrayBuffer | ArrayBufferView): void {
  // A buffer detached or resized since has another length: there is nothing to write back into
  if (original.byteLength !== copy.byteLength || copy.byteLength === 0) return;
  bytesOf(original).set(bytesOf(copy));
}

function bytesOf(value: ArrayBufferLike | ArrayBufferView): Uint8Array {
  return ArrayBuffer.isView(value)
    ? new Uint8Array(value.buffer, value.byteOffset, value.byteLength)
    : new Uint8Array(value);
}
