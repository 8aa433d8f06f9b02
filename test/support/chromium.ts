/**
 * Debian's Chromium for tests that open a page in a real headless browser (through
 * `playwright-core`, which downloads no browser of its own).
 *
 * - `/usr/bin/chromium` present: the tests run;
 * - absent and not required: {@link skipWithoutChromium} says so loudly on stderr and the tests
 *   are skipped;
 * - absent and required (`CI=true` or `REQUIRE_SERVICES=1`, as for the other services): the tests
 *   run and {@link launchChromium} fails them, saying how to install it.
 *
 * @example
 * ```ts
 * it.skipIf(skipWithoutChromium())('draws the page', async () => {
 *   const browser = await launchChromium();
 *   try { await (await browser.newPage()).goto(url); } finally { await browser.close(); }
 * });
 * ```
 */
import { existsSync } from 'node:fs';
import { type Browser, chromium } from 'playwright-core';
import { requireServices } from './service-env.js';

/** Where Debian's `chromium` package installs the browser. */
export const chromiumPath = '/usr/bin/chromium';

/** Headless, sandbox-free (root in a container), and quiet on the network. */
export const chromiumArgs: readonly string[] = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

const install = 'apt-get install -y --no-install-recommends chromium';

/**
 * Whether tests that need Chromium must be skipped here: true only when it is missing and not
 * required, after a warning on stderr that names what is skipped and how to install it.
 */
export function skipWithoutChromium(what = 'the browser tests'): boolean {
  if (existsSync(chromiumPath) || requireServices) return false;
  console.warn(
    `Chromium is missing (${chromiumPath}): SKIPPING ${what}. Install it with \`${install}\` ` +
      '(CI=true or REQUIRE_SERVICES=1 makes its absence a failure).',
  );
  return true;
}

/**
 * Launches the headless Chromium of {@link chromiumPath} with {@link chromiumArgs}; the caller
 * closes it.
 *
 * @throws Error naming the missing browser and how to install it, when it is absent
 */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(chromiumPath)) {
    throw new Error(
      `Chromium is required here (CI=true or REQUIRE_SERVICES=1) but ${chromiumPath} is missing: install it with \`${install}\` (.ci/run does).`,
    );
  }
  return chromium.launch({ executablePath: chromiumPath, args: [...chromiumArgs] });
}
