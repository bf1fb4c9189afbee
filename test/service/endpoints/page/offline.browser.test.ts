/**
 * The verification page offline (issue 37), in Chromium against a real receiptd: a page loaded
 * online and then taken offline (`context.setOffline`) verifies a dropped bundle, also after
 * Cancel ended its worker, twice. The page fetches its worker's script at load and starts
 * every worker from those bytes (src/web/verify-client.ts), so nothing it does after the load
 * needs the network: no request fails, and no console line says one did.
 *
 * Each test loads the page afresh, with no verification before going offline: a worker
 * started by an earlier verification would hide a page that fetches its worker too late.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, afterEach, before, describe, test } from "node:test";
import type { Page } from "playwright-core";
import {
  type Chromium,
  collectProblems,
  launchChromium,
  watchContext,
} from "../../../../bench/support/chromium.js";
import { nearLimitBundle } from "../../../../bench/support/large-bundles.js";
import { corpusPath } from "../../../support/corpus.js";
import { startTestService, type TestService } from "../../support/service.js";

/** The bar: a small bundle dropped on a page offline has its verdict within 10 s. */
const VERDICT_WAIT_MS = 10_000;
const HAPPY_MINIMAL = corpusPath("vectors/01_happy_minimal.json");

const scratch = mkdtempSync(join(tmpdir(), "receiptd-page-offline-"));
let service: TestService;
let origin: string;
let browser: Chromium;
let page: Page;
const problems: string[] = [];
/**
 * Network requests the browser tried after going offline (each would fail). A worker started
 * from the page's Blob URL shows as a `blob:` request: bytes in the page's memory, not the
 * network.
 */
const offlineRequests: string[] = [];
let offline = false;

before(async () => {
  service = await startTestService({}, { anonymous: true });
  await service.app.listen({ host: "127.0.0.1", port: 0 });
  origin = `http://127.0.0.1:${(service.app.server.address() as AddressInfo).port}`;
  browser = await launchChromium();
  await watchContext(browser.context);
  browser.context.on("request", (request) => {
    if (offline && !request.url().startsWith("blob:")) offlineRequests.push(request.url());
  });
  page = browser.context.pages()[0] ?? (await browser.context.newPage());
  collectProblems(page, problems);
});

after(async () => {
  await browser?.close();
  await service?.close();
  rmSync(scratch, { recursive: true, force: true });
});

afterEach(async () => {
  offline = false;
  await browser.context.setOffline(false);
});

/** Loads the page online, as a person would, until the network is quiet; then goes offline. */
async function loadThenGoOffline(): Promise<void> {
  await page.goto(`${origin}/`);
  await page.waitForSelector("html[data-ready=true]");
  await page.waitForLoadState("networkidle");
  assert.equal(
    await page.getAttribute("html", "data-verifier"),
    "held",
    "the worker's script is held by the page",
  );
  problems.length = 0;
  offlineRequests.length = 0;
  offline = true;
  await browser.context.setOffline(true);
  await page.waitForSelector("#network-note:not([hidden])");
}

/**
 * Chooses `path` in the Bundle tab and waits (the bar) for the run to end: its verdict,
 * or the note the page showed instead.
 */
async function verdictOf(path: string): Promise<string> {
  const runs = Number((await page.getAttribute("#bundle-result", "data-run")) ?? 0);
  await page.setInputFiles("#bundle-file", path);
  await page.waitForFunction(
    (previous) =>
      Number(document.querySelector("#bundle-result")?.getAttribute("data-run")) > previous,
    runs,
    { timeout: VERDICT_WAIT_MS },
  );
  return page.evaluate(() => {
    const verdict = document.querySelector("#bundle-verdict")?.getAttribute("data-verdict");
    return verdict ?? `no verdict: ${document.querySelector("#bundle-result")?.textContent}`;
  });
}

/** Starts verifying the 8 MiB bundle, and cancels it while it runs. */
async function startAndCancel(path: string): Promise<void> {
  await page.setInputFiles("#bundle-file", path);
  await page.waitForFunction(() =>
    document.querySelector("#bundle-status")?.textContent?.startsWith("Verifying"),
  );
  assert.equal(page.workers().length, 1, "one worker, verifying");
  const ended = page.workers()[0]!.waitForEvent("close");
  const replacement = page.waitForEvent("worker");
  await page.click("#bundle-cancel");
  await ended;
  await page.waitForSelector("#bundle-cancelled");
  assert.equal(await page.locator("#bundle-verdict").count(), 0);
  // The replacement starts at once, from the script the page holds.
  assert.match((await replacement).url(), /^blob:/);
}

describe("the verification page offline", () => {
  test("loaded online, then offline: 01_happy_minimal.json gets its verdict", async () => {
    await loadThenGoOffline();
    assert.equal(await verdictOf(HAPPY_MINIMAL), "TRUSTED");
    assert.match(
      (await page.textContent("#bundle-result .meta")) ?? "",
      /^01_happy_minimal\.json ·/,
    );
    assert.deepEqual(offlineRequests, [], "nothing was requested offline");
    assert.deepEqual(problems, []);
  });

  test("offline, after Cancel, twice: the next verification still gets its verdict", async () => {
    const large = join(scratch, "near-limit.json");
    writeFileSync(large, nearLimitBundle());
    await loadThenGoOffline();
    for (const round of [1, 2]) {
      await startAndCancel(large);
      assert.equal(await verdictOf(HAPPY_MINIMAL), "TRUSTED", `after Cancel ${round}`);
    }
    assert.deepEqual(offlineRequests, [], "nothing was requested offline");
    assert.deepEqual(problems, []);
  });
});
