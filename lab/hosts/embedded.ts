/** The default host: the build in the lab's own process, on an embedded PGlite and in-process broker. */
import type { Build, BuildDeps } from '../api/build.js';
import { naiveBuild } from '../api/naive.js';
import { protectedBuild } from '../api/protected.js';
import { startApi } from '../api/server.js';
import { createBank } from '../bank.js';
import { createBroker } from '../broker.js';
import { pgliteDatabase } from '../database.js';
import type { BuildHost, HostContext } from './host.js';

/** Makes a build of the lab's payments API by name. */
export const makeBuild = (name: HostContext['build'], deps: BuildDeps): Build | Promise<Build> =>
  name === 'bulwark' ? protectedBuild(deps) : naiveBuild(deps);

/**
 * Runs the build in this process: its own PGlite, broker and in-memory stores.
 *
 * @example
 * const host = await embeddedHost(context);
 */
export async function embeddedHost(context: HostContext): Promise<BuildHost> {
  const bank = await createBank(await pgliteDatabase(), context.accounts);
  const deps: BuildDeps = {
    seed: context.seed,
    timeline: context.timeline,
    bank,
    broker: createBroker({ seed: context.seed }),
    processor: context.processor,
    warehouse: context.warehouse,
    series: context.series,
    source: 'breaker',
    tenantRatePerSecond: context.tenantRatePerSecond,
    resetTimeoutMs: context.resetTimeoutMs,
  };
  const build = await makeBuild(context.build, deps);
  const api = await startApi(build, bank.accountIds, context.series);
  return {
    urls: [api.url],
    bank,
    start() {},
    async settle(timeoutMs) {
      await build.drain(timeoutMs);
      return { stats: build.stats(), series: [] };
    },
    async close() {
      await api.close();
      await build.close();
      await bank.db.close();
    },
  };
}
