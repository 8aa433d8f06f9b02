import { createRequire } from 'node:module';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { keySlot } from './slot.js';

// The slot function ioredis routes a Cluster's commands by (the package has no types).
const clusterKeySlot = createRequire(import.meta.url)('cluster-key-slot') as (key: string) => number;

/** Redis's rule written plainly (`keyHashSlot` in cluster.c): bit by bit, over the tag's bytes. */
function referenceSlot(key: string): number {
  const bytes = Buffer.from(key);
  const open = bytes.indexOf(0x7b);
  const close = open === -1 ? -1 : bytes.indexOf(0x7d, open + 1);
  let crc = 0;
  for (const byte of close > open + 1 ? bytes.subarray(open + 1, close) : bytes) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit++) crc = (crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1) & 0xffff;
  }
  return crc & 0x3fff;
}

/** Keys of braces and any characters, ASCII only or not. */
const keys = fc.oneof(
  fc.string({
    unit: fc.oneof(
      fc.constantFrom('{', '}'),
      fc.string({ unit: 'binary-ascii', minLength: 1, maxLength: 1 }),
    ),
  }),
  fc.string({
    unit: fc.oneof(
      fc.constantFrom('{', '}', 'é', '€'),
      fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }),
    ),
  }),
);

describe('keySlot', () => {
  it.each([
    // What `CLUSTER KEYSLOT` answers on Redis 7.0.
    ['foo', 12182],
    ['123456789', 12739], // CRC16-XMODEM check value 0x31C3
    ['{user1000}.following', 3443],
    ['{user1000}.followers', 3443],
    ['foo{}{bar}', 8363], // empty first tag: the whole key
    ['{}}', 14790], // the same (cluster-key-slot answers 0: it looks for a later `}`)
    ['foo{{bar}}zap', 4015], // the tag is `{bar`
    ['{bar', 4015], // no `}`: the whole key
    ['foo{bar}{zap}', 5061], // the first tag only: `bar`
    ['bar', 5061],
    ['héllo', 11061],
    ['日本語キー', 15866],
    ['a{é}b', 10180], // a non-ASCII tag
    ['😀', 2959], // a surrogate pair: 4 UTF-8 bytes
    ['', 0],
  ])('%j is in slot %i', (key, slot) => {
    expect(keySlot(key)).toBe(slot);
  });

  it('hashes only the tag: keys sharing a non-empty tag share a slot', () => {
    expect(keySlot('rl:api:{user:42}')).toBe(keySlot('user:42'));
    expect(keySlot('x{ü}')).toBe(keySlot('ü'));
  });

  it('hashes U+007F as one byte and U+0080 as its two UTF-8 bytes', () => {
    for (const key of ['\u007f', 'a\u0080b', '\u0080', '{\u0080}x'])
      expect([key, keySlot(key)]).toEqual([key, referenceSlot(key)]);
  });

  it('hashes a lone surrogate as U+FFFD, the bytes a client writes for it', () => {
    expect(keySlot('a\ud800b')).toBe(keySlot('a\ufffdb'));
  });

  it("agrees with Redis's rule and with cluster-key-slot on random keys", () => {
    fc.assert(
      fc.property(keys, (key) => {
        expect(keySlot(key)).toBe(referenceSlot(key));
        // cluster-key-slot departs from Redis only on an empty first tag followed by another `}`.
        const open = key.indexOf('{');
        if (open === -1 || key[open + 1] !== '}') expect(keySlot(key)).toBe(clusterKeySlot(key));
      }),
      { numRuns: 4_000, seed: 20_251 },
    );
  });
});
