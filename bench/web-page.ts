/**
 * The verification page on large bundles (issue 25), in Chromium: for each bundle, the time
 * from choosing the file to the verdict on the page, next to the CLI's time on the same file;
 * the long tasks on the page's thread; DOM nodes; the renderer's memory. Not part of
 * `npm run bench` (it needs Chromium and takes minutes); run it by hand:
 *
 *   npm run build && node --import tsx bench/web-page.ts [--root CHECKOUT] [--cap SECONDS]
 *
 * `--root` measures another checkout's build (its dist/), e.g. a worktree of an older commit:
 * a page that never draws a verdict is given up on after `--cap` seconds (default 60).
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { launchChromium } from "./support/chromium.js";
import { freePort } from "./support/free-port.js";
import {
  nearLimitBundle,
  repeatedReceiptsBundle,
  uniqueReceiptsBundle,
} from "./support/large-bundles.js";
import { chooseAndMeasure, chromiumProcesses, installProbe } from "./support/page-measure.js";

const { values } = parseArgs({
  options: {
    root: { type: "string" },
    cap: { type: "string", default: "60" },
    only: { type: "string" },
  },
});
const root = resolve(values.root ?? fileURLToPath(new URL("..", import.meta.url)));
const capMs = Number(values.cap) * 1000;
/** A page past this is given up on (the page before issue 25 grew to 9.4 GB). */
const MEMORY_CAP_BYTES = 3 * 1024 ** 3;

const scratch = mkdtempSync(join(tmpdir(), "receiptd-bench-page-"));
const makers: [string, () => Uint8Array][] = [
  ["2,000 repeated receipts", () => repeatedReceiptsBundle(2000)],
  ["10,000 unique receipts", () => uniqueReceiptsBundle(10_000)],
  ["8 MiB (repeated receipts)", nearLimitBundle],
];
const bundles = makers
  .filter(([name]) => values.only === undefined || name.includes(values.only))
  .map(([name, make]): [string, Uint8Array] => [name, make()]);

const port = await freePort();
const service = spawn(
  process.execPath,
  [join(root, "dist/src/cli/receiptd.js"), "serve", "--host", "127.0.0.1", "--port", String(port)],
  { env: { ...process.env, DATA_DIR: join(scratch, "data"), LOG_LEVEL: "warn" }, stdio: "ignore" },
);
const origin = `http://127.0.0.1:${port}`;
for (let i = 0; ; i++) {
  try {
    if ((await fetch(`${origin}/`)).ok) break;
  } catch {
    if (i > 100) throw new Error("receiptd did not start");
  }
  await new Promise((done) => setTimeout(done, 200));
}

const rows: Record<string, unknown>[] = [];
try {
  for (const [name, bytes] of bundles) {
    const file = join(scratch, `${name.replace(/\W+/g, "-")}.json`);
    writeFileSync(file, bytes);
    const cliStarted = performance.now();
    spawnSync(process.execPath, [join(root, "dist/src/cli/continuity-receipt-verify.js"), file], {
      stdio: "ignore",
    });
    const cliMs = performance.now() - cliStarted;
    // A browser per bundle: a page that hung must not weigh on the next one.
    const browser = await launchChromium();
    try {
      const page = browser.context.pages()[0] ?? (await browser.context.newPage());
      await page.goto(`${origin}/`);
      await page.waitForSelector("html[data-ready=true]");
      await installProbe(page);
      const seen = await chooseAndMeasure(page, file, browser.profile, capMs, MEMORY_CAP_BYTES);
      const row = {
        bundle: name,
        bytes: bytes.length,
        cli_ms: Math.round(cliMs),
        verdict_ms:
          seen.verdictMs === null
            ? `none: gave up at ${capMs / 1000} s or ${MEMORY_CAP_BYTES / 1024 ** 3} GB`
            : Math.round(seen.verdictMs),
        ratio_to_cli: seen.verdictMs === null ? null : Number((seen.verdictMs / cliMs).toFixed(2)),
        longest_task_ms: seen.longTasks.length === 0 ? 0 : Math.round(Math.max(...seen.longTasks)),
        long_tasks_over_200ms: seen.longTasks.filter((ms) => ms > 200).length,
        dom_nodes: seen.domNodes,
        js_heap_mb: seen.heapBytes === null ? null : Math.round(seen.heapBytes / 2 ** 20),
        renderer_rss_mb: Math.round(seen.rendererRssBytes / 2 ** 20),
      };
      rows.push(row);
      console.log(JSON.stringify(row));
    } finally {
      // A page that hangs does not close: end its browser's processes first.
      for (const { pid } of chromiumProcesses(browser.profile)) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          // Already gone.
        }
      }
      await browser.close().catch(() => {});
    }
  }
} finally {
  service.kill();
  rmSync(scratch, { recursive: true, force: true });
}
console.log(`\nroot ${root}`);
console.table(rows);
