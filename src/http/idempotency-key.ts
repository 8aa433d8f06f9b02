/**
 * Reading the `Idempotency-Key` request header (draft-ietf-httpapi-idempotency-key-header): an
 * RFC 8941 Structured Field Item whose value is a String (`"8e03978e-40d5"`), and the bare token
 * most clients send instead (`8e03978e-40d5`). Both forms of the same characters are the same key.
 */

/** The longest key accepted, in characters (after unescaping an sf-string). */
export const MAX_KEY_LENGTH = 255;

/** What the header says: a key, no header at all, or a value that is not a key. */
export type ParsedKey =
  | { readonly status: 'key'; readonly key: string }
  | { readonly status: 'missing' }
  | { readonly status: 'malformed'; readonly reason: string };

const missing: ParsedKey = { status: 'missing' };
const malformed = (reason: string): ParsedKey => ({ status: 'malformed', reason });

/**
 * Parses the `Idempotency-Key` header as node:http gives it (`req.headers['idempotency-key']`, or
 * every value when it was sent more than once). Never throws.
 *
 * - absent → `missing`;
 * - `"..."`: an sf-string: printable ASCII (0x20–0x7E), `\"` and `\\` the only escapes, optionally
 *   followed by sf parameters (`;name=value`, ignored as the draft allows);
 * - anything else: a bare token of visible ASCII (0x21–0x7E), no spaces or control characters;
 * - `malformed` for an empty value or key, a key over {@link MAX_KEY_LENGTH} characters, a control
 *   character (a tab, DEL) or another character outside those sets, a bad escape, an unterminated
 *   string, or the header sent twice (which key would count?).
 *
 * @example
 * parseIdempotencyKey('"abc"'); // { status: 'key', key: 'abc' }
 * parseIdempotencyKey('abc'); // { status: 'key', key: 'abc' }, the same key
 * parseIdempotencyKey(''); // { status: 'malformed', reason: 'the Idempotency-Key header is empty' }
 */
export function parseIdempotencyKey(header: string | readonly string[] | undefined): ParsedKey {
  if (header === undefined) return missing;
  let value: string;
  if (typeof header === 'string') value = header;
  else if (header.length === 1) value = header[0]!;
  else if (header.length === 0) return missing;
  else return malformed('the Idempotency-Key header was sent more than once');
  // Optional whitespace around a field value is not part of it (RFC 9110 §5.5).
  value = value.replace(/^[ \t]+|[ \t]+$/g, '');
  if (value === '') return malformed('the Idempotency-Key header is empty');
  return value.startsWith('"') ? sfString(value) : bareToken(value);
}

function bareToken(value: string): ParsedKey {
  if (value.length > MAX_KEY_LENGTH) return tooLong();
  // Stryker disable next-line EqualityOperator: (<=) charCodeAt past the end is NaN, which neither bound refuses; (>=) would accept every token, which the refusal tests see, but shares the mutator
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c < 0x21 || c > 0x7e) return badCharacter(c);
  }
  return { status: 'key', key: value };
}

function sfString(value: string): ParsedKey {
  let key = '';
  let i = 1;
  for (; i < value.length; i++) {
    const ch = value[i]!;
    const c = ch.charCodeAt(0);
    if (ch === '\\') {
      const escaped = value[i + 1];
      if (escaped !== '"' && escaped !== '\\') {
        return malformed('the Idempotency-Key string has a bad escape (only \\" and \\\\ are allowed)');
      }
      key += escaped;
      i++;
    } else if (ch === '"') break;
    else if (c < 0x20 || c > 0x7e) return badCharacter(c);
    else key += ch;
  }
  if (i >= value.length) return malformed('the Idempotency-Key string is not terminated');
  const rest = value.slice(i + 1);
  if (rest !== '' && !rest.startsWith(';')) {
    return malformed('the Idempotency-Key header has characters after its string');
  }
  if (key === '') return malformed('the Idempotency-Key is empty');
  if (key.length > MAX_KEY_LENGTH) return tooLong();
  return { status: 'key', key };
}

function tooLong(): ParsedKey {
  return malformed(`the Idempotency-Key is longer than ${MAX_KEY_LENGTH} characters`);
}

function badCharacter(code: number): ParsedKey {
  const what = code < 0x20 || code === 0x7f ? 'a control character' : 'a character that is not visible ASCII';
  return malformed(
    `the Idempotency-Key contains ${what} (U+${code.toString(16).toUpperCase().padStart(4, '0')})`,
  );
}
