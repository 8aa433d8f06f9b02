/**
 * Redis Cluster's hash slot of a key, computed here exactly as Redis computes it, so that a store
 * can tell which keys one script call may touch together (all of a call's keys must share a slot).
 */

/** CRC16-XMODEM (polynomial 0x1021, initial value 0) of every byte value, for the byte-wise update. */
const table = new Uint16Array(256);
for (const byte of table.keys()) {
  let crc = byte << 8;
  for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1;
  table[byte] = crc;
}

const utf8 = new TextEncoder();

/**
 * The Redis Cluster hash slot (0 to 16 383) of `key`, as `CLUSTER KEYSLOT` gives it: the CRC16-XMODEM
 * of the UTF-8 bytes of the key's hash tag, the 14 low bits. The hash tag is what lies between the
 * first `{` and the first `}` after it, if that is not empty (`{user1}:a` and `{user1}:b` share a
 * slot); otherwise the whole key is hashed (`foo{}{bar}`). An all-ASCII key costs no allocation: its
 * characters are its bytes. Never throws; a lone surrogate is hashed as U+FFFD, the bytes a client
 * writes for it.
 *
 * @example
 * keySlot('foo'); // 12182
 * keySlot('{user1000}.following') === keySlot('{user1000}.followers'); // true
 */
export function keySlot(key: string): number {
  let start = 0;
  let end = key.length;
  const open = key.indexOf('{');
  if (open !== -1) {
    const close = key.indexOf('}', open + 1);
    // `{` and `}` are ASCII, and UTF-8 never uses their bytes inside a longer character: searching
    // the UTF-16 text finds the same tag as searching the bytes.
    if (close > open + 1) {
      start = open + 1;
      end = close;
    }
  }
  let crc = 0;
  for (let i = start; i < end; i++) {
    const code = key.charCodeAt(i);
    // Stryker disable next-line ConditionalExpression: (true) the UTF-8 path gives ASCII the same bytes, and so the same CRC; this is its fast path
    if (code >= 0x80) return crcOfBytes(crc, utf8.encode(key.slice(i, end))) & 0x3fff;
    crc = ((crc << 8) ^ table[((crc >> 8) ^ code) & 0xff]!) & 0xffff;
  }
  return crc & 0x3fff;
}

/** `crc` carried on over `bytes`. */
function crcOfBytes(crc: number, bytes: Uint8Array): number {
  for (const byte of bytes) crc = ((crc << 8) ^ table[((crc >> 8) ^ byte) & 0xff]!) & 0xffff;
  return crc;
}
