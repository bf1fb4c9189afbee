// Where the verification page's browser tests find Chromium, and the one line a run without
// it stops with. Shared by scripts/run-tests.mjs (which checks before any test starts) and
// bench/support/chromium.ts (which launches it). Nothing here installs a browser: .ci/run
// does, as root, with apt-get.
import { existsSync } from "node:fs";

export const DEFAULT_CHROMIUM = "/usr/bin/chromium";

/** `CHROMIUM_PATH` when set, else Debian's Chromium. */
export function chromiumPath(env = process.env) {
  return env.CHROMIUM_PATH || DEFAULT_CHROMIUM;
}

/** Null when the browser is there; else the one-line explanation. */
export function missingChromium(env = process.env) {
  const path = chromiumPath(env);
  if (existsSync(path)) return null;
  return (
    `Chromium not found at ${path}: the verification page's browser tests need it. ` +
    "Set CHROMIUM_PATH to a Chromium or Chrome binary, or install Debian's " +
    "(as root: apt-get install chromium)."
  );
}
