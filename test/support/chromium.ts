/**
 * Debian's Chromium driven by playwright-core, for the verification page's tests. Installed
 * with apt-get when missing (CI runs as root). The flags keep it off the network: this
 * machine's network is closed, and without them Chromium stalls on background connections.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type BrowserContext, chromium, type Page } from "playwright-core";

export const CHROMIUM = "/usr/bin/chromium";

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

/** `apt-get update && apt-get install -y chromium` unless /usr/bin/chromium is there. */
export function ensureChromium(): void {
  if (existsSync(CHROMIUM)) return;
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  for (const args of [["update"], ["install", "-y", "chromium"]]) {
    const result = spawnSync("apt-get", args, { stdio: "inherit", env });
    if (result.status !== 0) {
      throw new Error(`apt-get ${args.join(" ")} failed (${result.status}): Chromium is needed`);
    }
  }
  if (!existsSync(CHROMIUM))
    throw new Error(`apt-get installed chromium, but ${CHROMIUM} is missing`);
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
