/**
 * The fault proxy moved to `bulwark/testing` (`src/testing/fault-proxy.ts`) as `faultProxy`; the
 * chaos tests that start one keep importing it from here under the name they were written with.
 */
export { type FaultProxy, faultProxy as startFaultProxy } from '../../src/testing/fault-proxy.js';
