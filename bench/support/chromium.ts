/**
 * A system Chromium (Debian's, or `CHROMIUM_PATH`) driven by playwright-core, for the
 * verification page's tests. The tests never install it: `.ci/run` does (as root, with
 * apt-get), and anywhere else a missing browser is one line saying what to do, not an
 * apt-get transcript. The flags keep it off the network: this machine's network is closed,
 * and without them Chromium stalls on background connections.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type BrowserContext, chromium, type Page } from "playwright-core";
import { chromiumPath, missingChromium } from "../../scripts/chromium.mjs";

export const CHROMIUM = chromiumPath();

export const CHROMIUM_FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE localhost , EXCLUDE 127.0.0.1",
];

export function ensureChromium(): void {
  const missing = missingChromium();
  if (missing === null) return;
  const error = new Error(missing);
  // The test runner prints the stack; here it would only bury the line that matters.
  error.stack = missing;
  throw error;
}

export interface Chromium {
  context: BrowserContext;
  /** The profile folder, which names this browser's processes (`--user-data-dir`). */
  profile: string;
  close(): Promise<void>;
}

/** One Chromium with a fresh profile (`--user-data-dir` in a new temporary folder). */
export async function launchChromium(): Promise<Chromium> {
  ensureChromium();
  const profile = mkdtempSync(join(tmpdir(), "receiptd-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_FLAGS,
    viewport: { width: 1280, height: 900 },
    timeout: 60_000,
  });
  return {
    context,
    profile,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/**
 * Prepares every page of `context`: a Content-Security-Policy violation becomes a console
 * error, and page scripts get the `__name` helper that functions handed to `page.evaluate`
 * call (tsx compiles tests with esbuild's keepNames, which wraps named functions in
 * `__name(fn, "name")`; the page does not define it).
 */
export async function watchContext(context: BrowserContext): Promise<void> {
  // Page-side JavaScript, as text: this module is compiled without the DOM's types.
  await context.addInitScript({
    content: `
      globalThis.__name = (target) => target;
      document.addEventListener("securitypolicyviolation", (event) => {
        console.error("CSP violation: " + event.violatedDirective + " " + event.blockedURI);
      });
    `,
  });
}

/** Collects the console errors and warnings of `page`, and its uncaught errors, in `problems`. */
export function collectProblems(page: Page, problems: string[]): void {
  page.on("console", (message) => {
    if (message.type() === "error" || message.type() === "warning") problems.push(message.text());
  });
  page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
}
