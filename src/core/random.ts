/**
 * Randomness for jitter. Defaults to the platform CSPRNG (`crypto.getRandomValues`) so that
 * jitter cannot be predicted or synchronised across processes seeded alike; tests inject a
 * seeded source (`seededRandom` from `bulwark/testing`).
 */

/** Returns a float in [0, 1). */
export type Random = () => number;

const BATCH = 256;
const buffer = new Uint32Array(BATCH);
let index = BATCH;

/** Crypto-backed uniform [0, 1), drawn from a pooled buffer so each call costs no syscall. */
export const cryptoRandom: Random = () => {
  if (index === BATCH) {
    crypto.getRandomValues(buffer);
    index = 0;
  }
  return buffer[index++]! / 4294967296;
};
