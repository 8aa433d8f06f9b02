/**
 * The JSON the idempotency pattern hashes and stores. One walk for both, with no ambiguity: a
 * value either has exactly one encoding or is refused with a `TypeError`.
 *
 * - Canonical form (fingerprints, `idempotencyKey`): object keys sorted by UTF-16 code units,
 *   numbers as JavaScript prints them (`-0` as `0`), no whitespace.
 * - Stored form (results): object keys in their own order, so a replay returns the same shape.
 * - Both: a property whose value is `undefined` is left out (as `JSON.stringify` does, so
 *   `{ a: undefined }` and `{}` are the same request); `undefined` in an array, `NaN`, `±Infinity`,
 *   bigints, functions, symbols, `Map`, `Set` and cycles are refused (JSON has no faithful form for
 *   them). `toJSON` is honoured (a `Date` is its ISO string). Bytes (`Uint8Array`, `Buffer`, any
 *   typed array's bytes, `ArrayBuffer`) become `{"$bytes":"<base64>"}` and decode as `Uint8Array`;
 *   an object key that starts with `$` is written with one more `$`, so no user object can pass
 *   for bytes.
 */

/** Serialises `value` in canonical form (sorted keys). Throws a `TypeError` for what JSON cannot hold faithfully. */
export function canonicalJson(value: unknown): string {
  return write(value, true, new Set(), 'value');
}

/** Serialises `value` in stored form (keys in order). Throws a `TypeError` like {@link canonicalJson}. */
export function storedJson(value: unknown): string {
  return write(value, false, new Set(), 'value');
}

/** Reads what {@link storedJson} wrote: bytes come back as `Uint8Array`, escaped keys unescaped. */
export function parseStoredJson(text: string): unknown {
  return revive(JSON.parse(text));
}

function refuse(path: string, what: string): never {
  throw new TypeError(`expected ${path} to be JSON, got ${what} (idempotent requests and results are JSON)`);
}

function write(value: unknown, sorted: boolean, seen: Set<object>, path: string): string {
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      if (!Number.isFinite(value)) refuse(path, String(value));
      return String(value); // -0 prints as 0
    case 'object':
      return value === null ? 'null' : writeObject(value, sorted, seen, path);
    default:
      return refuse(path, typeof value === 'undefined' ? 'undefined' : `a ${typeof value}`);
  }
}

function writeObject(value: object, sorted: boolean, seen: Set<object>, path: string): string {
  const bytes = bytesOf(value);
  if (bytes !== undefined) return `{"$bytes":${JSON.stringify(toBase64(bytes))}}`;
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function') {
    return write((value as { toJSON(): unknown }).toJSON(), sorted, seen, path);
  }
  if (value instanceof Map || value instanceof Set) refuse(path, `a ${value.constructor.name}`);
  if (seen.has(value)) refuse(path, 'a cycle');
  seen.add(value);
  let out: string;
  if (Array.isArray(value)) {
    const items: string[] = [];
    for (let i = 0; i < value.length; i++) items.push(write(value[i], sorted, seen, `${path}[${i}]`));
    out = `[${items.join(',')}]`;
  } else {
    const keys = Object.keys(value);
    if (sorted) keys.sort();
    const entries: string[] = [];
    for (const key of keys) {
      const item = (value as Record<string, unknown>)[key];
      if (item === undefined) continue;
      const name = key.startsWith('$') ? `$${key}` : key;
      entries.push(`${JSON.stringify(name)}:${write(item, sorted, seen, `${path}.${key}`)}`);
    }
    out = `{${entries.join(',')}}`;
  }
  seen.delete(value);
  return out;
}

function bytesOf(value: object): Uint8Array | undefined {
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  if (ArrayBuffer.isView(value)) return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  return undefined;
}

function revive(value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(revive);
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record);
  // In stored form a "$bytes" key is only ever the bytes marker: a user's is written "$$bytes".
  if (typeof record.$bytes === 'string') return fromBase64(record.$bytes);
  const out: Record<string, unknown> = {};
  for (const key of keys) {
    // defineProperty, not assignment: a "__proto__" key stays a plain property.
    Object.defineProperty(out, key.startsWith('$') ? key.slice(1) : key, {
      value: revive(record[key]),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

function toBase64(bytes: Uint8Array): string {
  let binary = '';
  // Stryker disable next-line EqualityOperator: (<=) one more chunk past the end is empty and adds nothing
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(binary);
}

function fromBase64(text: string): Uint8Array {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  // Stryker disable next-line EqualityOperator: (<=) a typed array ignores the write one past its end
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

/** The SHA-256 of `text` (UTF-8), as 64 lowercase hex digits (Web Crypto). */
export async function sha256Hex(text: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)));
  let hex = '';
  for (const byte of digest) hex += byte.toString(16).padStart(2, '0');
  return hex;
}
