/**
 * Names that go into SQL text: the schema the stores live in, quoted as an identifier, and the
 * notification channels derived from it. Values never go into SQL text; they are parameters.
 */
import { show } from '../../core/validate.js';

/** PostgreSQL keeps the first 63 bytes of an identifier (NAMEDATALEN − 1) and drops the rest. */
const MAX_IDENTIFIER_BYTES = 63;

/**
 * Checks the `schema` option: a non-empty string of at most 63 UTF-8 bytes, without U+0000 and not
 * starting with `pg_` (reserved by PostgreSQL). Any other character is fine: the name is quoted.
 * Throws a `TypeError` naming the option.
 */
export function schemaName(name: string, value: unknown): string {
  if (
    typeof value !== 'string' ||
    value.length === 0 ||
    value.includes('\u0000') ||
    new TextEncoder().encode(value).length > MAX_IDENTIFIER_BYTES ||
    value.toLowerCase().startsWith('pg_')
  ) {
    throw new TypeError(
      `expected "${name}" to be a schema name (1 to 63 bytes, no U+0000, not starting with "pg_"), got ${show(value)}`,
    );
  }
  return value;
}

/** `name` quoted as an SQL identifier: `my "schema"` → `"my ""schema"""`. */
export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** FNV-1a, 32 bits, as 8 hex digits: short, stable and dependency-free (collisions only cost a spurious wake). */
function fnv1a(text: string): string {
  let hash = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(text)) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash.toString(16).padStart(8, '0');
}

/**
 * The notification channel of `topic` (e.g. `idempotency`) in `schema`: `bulwark_<topic>_<hash of
 * the schema>`, so store sets on different schemas of one database do not wake each other, and the
 * name stays within PostgreSQL's 63-byte limit whatever the schema is called.
 */
export function channelName(schema: string, topic: string): string {
  return `bulwark_${topic}_${fnv1a(schema)}`;
}
