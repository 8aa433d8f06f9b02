/**
 * The lab as an end-to-end test: a short embedded run of both builds under the same seeded,
 * chaotic load. The bulwark build must keep every invariant (no duplicate charge, no lost event,
 * balances and orders consistent); the naive build must show the problem the lab is about. Counts
 * from ground truth, never timings.
 */
import { expect, it } from 'vitest';
import { check, invariants } from '../../lab/checks.js';
import { runLab } from '../../lab/scenario.js';
import { renderReport } from '../../lab/table.js';

it('keeps every invariant with bulwark, and charges twice without it', async () => {
  const [bulwark, naive] = await runLab({ durationMs: 3_000, seed: 1, clients: 12, noisyClients: 8 });
  const protectedFindings = check(bulwark!);
  const naiveFindings = check(naive!);
  console.log(renderReport([bulwark!, naive!]).text); // the figures that matter, in the test's output

  expect(bulwark!.load.succeeded).toBeGreaterThan(50); // the run did real work
  expect(invariants(protectedFindings).filter((invariant) => !invariant.held)).toEqual([]);
  expect(protectedFindings).toMatchObject({
    duplicateCharges: 0,
    lostEvents: 0,
    eventsHandledTwice: 0,
    accountsOff: 0,
    paymentsMismatched: 0,
  });
  expect(bulwark!.stats.breakerTransitions).toBeGreaterThan(0); // the outage opened the breaker

  expect(naiveFindings.duplicateCharges).toBeGreaterThan(0);
  expect(naiveFindings.chargesExecuted).toBeGreaterThan(naiveFindings.uniqueCharged);
}, 30_000);
