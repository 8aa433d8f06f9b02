/**
 * How `bumpVersion` publishes `message(version)` in the same script as its `INCR`: the new version
 * is known only on the server, and a JavaScript function cannot run there, so the message is sent
 * as the text around the version, which the script joins around the version it made. One round
 * trip, and the message published is exactly `message(version)` for every message that treats the
 * version as text.
 */
import { show } from '../../core/validate.js';
import { text } from './values.js';

/** Two stand-in versions: safe integers of different lengths, neither's digits inside the other's. */
const markers = [987_654_321_987, 24_680_246_802_468] as const;

/**
 * `message` as the bump script's arguments: `[before, after]`, the text around the version's
 * digits, which the script joins around the new version (`before .. version .. after`), or
 * `[text]` for a message that ignores the version, published as is.
 *
 * Calls `message` with both {@link markers}, before anything is sent. Equal outputs are a message
 * that ignores the version. Otherwise one output is split around its marker's digits, which it
 * must hold exactly once, and the other output must be the same split around the other marker: so
 * a message that writes `String(version)` once and depends on it in no other way passes, even one
 * whose fixed text happens to hold one marker's digits, and one that pads, formats, repeats or
 * computes with the version is refused. Throws a `TypeError` for such a message, a `message` that
 * is not a function, or an output that is not a well-formed string; what `message` throws is
 * thrown as is.
 */
export function messageTemplate(message: (version: number) => string): [string] | [string, string] {
  if (typeof message !== 'function')
    throw new TypeError(`expected "message" to be a function, got ${show(message)}`);
  const [a, b] = markers;
  const outputs = [text('message', message(a)), text('message', message(b))] as const;
  if (outputs[0] === outputs[1]) return [outputs[0]];
  for (const [i, marker] of markers.entries()) {
    const out = outputs[i]!;
    const digits = String(marker);
    const at = out.indexOf(digits);
    if (at < 0 || out.includes(digits, at + 1)) continue;
    const before = out.slice(0, at);
    const after = out.slice(at + digits.length);
    if (`${before}${markers[1 - i]}${after}` === outputs[1 - i]) return [before, after];
  }
  throw new TypeError(
    `expected "message" to write String(version) exactly once and depend on the version in no other way, got ${show(outputs[0])} for version ${a}`,
  );
}
