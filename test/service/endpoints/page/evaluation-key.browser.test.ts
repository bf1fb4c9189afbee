/**
 * The page's "Evaluation key" tab in a real browser (Debian's Chromium through playwright-core),
 * against real receiptd services on 127.0.0.1: a key obtained through the page (8 bits of
 * work, one key per address) verifies a bundle over `POST /verify`, from the page and from
 * this test; the next request from the same address is refused and the page says so; the key
 * is stored nowhere; cancelling stops the work; a service with the feature off, and one that
 * cannot be reached, are explained.
 *
 * Screenshots go to a temporary folder (`SCREENSHOT_DIR` to keep them); `RECORD_SCREENSHOTS=1`
 * also writes docs/web-page-evaluation-key.png.
 */
import assert from "node:assert/strict";
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import type { Page, Request } from "playwright-core";
import {
  type Chromium,
  collectProblems,
  launchChromium,
  watchContext,
} from "../../../../bench/support/chromium.js";
import { nodeSha256 } from "../../../../src/access/evaluation/node-sha256.js";
import { solveProofOfWork } from "../../../../src/portable/proof-of-work.js";
import type { EvaluationKeysConfig } from "../../../../src/service/config.js";
import { corpusBytes } from "../../../support/corpus.js";
import { startTestService, type TestService } from "../../support/service.js";

const repository = fileURLToPath(new URL("../../../../", import.meta.url));
const shots = process.env.SCREENSHOT_DIR ?? mkdtempSync(join(tmpdir(), "receiptd-key-shots-"));
const RECORD = process.env.RECORD_SCREENSHOTS === "1";

/**
 * Small terms: 8 bits of work (a few hundred hashes), one key per address and day. The
 * difficulty rises one bit per key issued, so the page's second challenge asks more than the
 * /info it read when the tab opened: the page must solve what the challenge states.
 */
const TERMS: EvaluationKeysConfig = {
  keyDailyCap: 5,
  ttlHours: 2,
  perAddressDaily: 1,
  perNetworkDaily: 10,
  perDay: 10,
  powBits: 8,
  powRampBits: 10,
};

const BUNDLE = "02_happy_full.json";

interface Served {
  service: TestService;
  origin: string;
}

async function serve(evaluationKeys: EvaluationKeysConfig | null): Promise<Served> {
  const service = await startTestService({ evaluationKeys }, { anonymous: true });
  await service.app.listen({ host: "127.0.0.1", port: 0 });
  return {
    service,
    origin: `http://127.0.0.1:${(service.app.server.address() as AddressInfo).port}`,
  };
}

let main: Served;
/** 32 bits: about 4·10⁹ hashes, never done within a test, so there is time to cancel. */
let slow: Served;
let off: Served;
let browser: Chromium;
let page: Page;
const requests: Request[] = [];
const problems: string[] = [];
/** The key the page obtained (test 2 on). */
let issuedKey = "";

before(async () => {
  [main, slow, off] = await Promise.all([
    serve(TERMS),
    serve({ ...TERMS, powBits: 32 }),
    serve(null),
  ]);
  browser = await launchChromium();
  await watchContext(browser.context);
  // Not the verifier's worker starting from a Blob URL of its script, which the page fetched
  // at load (src/web/verify-client.ts): bytes in the page's memory, not a request.
  browser.context.on("request", (request) => {
    if (!request.url().startsWith("blob:")) requests.push(request);
  });
  page = browser.context.pages()[0] ?? (await browser.context.newPage());
  collectProblems(page, problems);
  await page.goto(`${main.origin}/`);
  await page.waitForSelector("html[data-ready=true]");
});

after(async () => {
  await browser?.close();
  await Promise.all([main, slow, off].map((served) => served?.service.close()));
  if (process.env.SCREENSHOT_DIR === undefined) rmSync(shots, { recursive: true, force: true });
});

/** A new page of the same browser at `origin`, loaded, with its problems collected. */
async function openPage(origin: string): Promise<Page> {
  const other = await browser.context.newPage();
  collectProblems(other, problems);
  await other.goto(`${origin}/`);
  await other.waitForSelector("html[data-ready=true]");
  return other;
}

/** What the page keeps in the browser's storage: nothing, ever. */
async function storage(target: Page): Promise<{ local: string; session: string; cookie: string }> {
  return target.evaluate(() => ({
    local: JSON.stringify({ ...localStorage }),
    session: JSON.stringify({ ...sessionStorage }),
    cookie: document.cookie,
  }));
}

/**
 * Chromium reports each 4xx/5xx answer of a `fetch` as a console error; the refusals these
 * tests ask for are expected. Everything else counts.
 */
function unexpectedProblems(allowed: RegExp[] = []): string[] {
  return problems.filter(
    (problem) =>
      !allowed.some((pattern) => pattern.test(problem.replace(/^Failed to load resource: /, ""))),
  );
}

function pathOf(request: Request): string {
  return new URL(request.url()).pathname;
}

async function verifyDirectly(key: string): Promise<{ status: number; verdict: unknown }> {
  const response = await fetch(`${main.origin}/verify`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: new Uint8Array(corpusBytes(`vectors/${BUNDLE}`)),
  });
  const body = (await response.json()) as { verdict?: unknown };
  return { status: response.status, verdict: body.verdict };
}

describe("evaluation keys on the page, in Chromium", () => {
  test("the tab reads the terms from /info when opened (not on load) and states them", async () => {
    assert.deepEqual(
      requests.filter((request) => !pathOf(request).startsWith("/assets/")).map(pathOf),
      ["/"],
      "loading the page asks the service for nothing",
    );
    await page.focus("#tab-anchor");
    await page.keyboard.press("ArrowRight");
    assert.equal(await page.getAttribute("#tab-key", "aria-selected"), "true");
    assert.equal(await page.isVisible("#panel-key"), true);
    await page.waitForSelector("#key-terms-list");
    const terms = (await page.textContent("#key-terms-list")) ?? "";
    for (const expected of [
      "5 calls per UTC day",
      "2 hours from issuance",
      "key_expired",
      "1 key per UTC day for each client address",
      "10 keys a day for everyone together",
      "8 bits: about 256 SHA-256 hashes",
      "stores only its SHA-256 hash",
      "shown only here, once",
      "never billed",
    ]) {
      assert.ok(terms.includes(expected), `the terms say “${expected}”: ${terms}`);
    }
    assert.equal(await page.isVisible("#key-form"), true);
    assert.equal(await page.getAttribute("#key-status", "role"), "status");
    assert.equal(await page.isVisible("#key-cancel"), false);
    // The submit button follows the tab in keyboard order.
    await page.keyboard.press("Tab");
    assert.equal(await page.evaluate(() => document.activeElement?.id), "key-submit");
    assert.deepEqual(unexpectedProblems(), []);
  });

  test("a key through the page: the work is solved here, the key shown once, stored nowhere", async () => {
    const before = requests.length;
    await page.keyboard.press("Enter");
    await page.waitForSelector("#key-issued .issued");
    issuedKey = ((await page.textContent("#key-issued .issued .issued__key")) ?? "").trim();
    assert.match(issuedKey, /^svc_[0-9a-f]{48}$/);
    assert.match((await page.textContent("#key-status")) ?? "", /Evaluation key issued/);
    assert.equal(
      await page.evaluate(() => document.activeElement?.closest(".issued") !== null),
      true,
      "focus moves to the key",
    );
    const card = (await page.textContent("#key-issued .issued")) ?? "";
    assert.match(card, /Shown only now/);
    assert.match(card, /Expires\s*\d{4}-\d\d-\d\d \d\d:\d\d(:\d\d)? UTC \(in 2 h\)/);
    assert.match(card, /5 calls per UTC day/);
    assert.match(card, /evaluation-[0-9a-f]{12}/);

    // One challenge, then one POST with exactly {challenge, nonce} whose nonce solves it.
    const made = requests.slice(before);
    assert.deepEqual(
      made.map((request) => `${request.method()} ${pathOf(request)}`),
      ["GET /keys/evaluation/challenge", "POST /keys/evaluation"],
    );
    const sent = JSON.parse(made[1]!.postData() ?? "") as Record<string, unknown>;
    assert.deepEqual(Object.keys(sent), ["challenge", "nonce"]);
    assert.match(String(sent.challenge), /^evk1\.8\./);
    assert.match(String(sent.nonce), /^[0-9]+$/);
    assert.equal(made[1]!.headers().authorization, undefined);

    assert.deepEqual(await storage(page), { local: "{}", session: "{}", cookie: "" });
    assert.ok(!page.url().includes(issuedKey));

    const picture = join(shots, "evaluation-key-issued.png");
    await page.screenshot({ path: picture, fullPage: true });
    assert.deepEqual([...readFileSync(picture).subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47]);
    if (RECORD) copyFileSync(picture, join(repository, "docs/web-page-evaluation-key.png"));
    await page.setViewportSize({ width: 375, height: 812 });
    try {
      const overflow = await page.evaluate(
        () => document.documentElement.scrollWidth - window.innerWidth,
      );
      assert.ok(overflow <= 0, `nothing is wider than a phone screen (overflow ${overflow}px)`);
      await page.evaluate(() => document.querySelector("#key-issued")?.scrollIntoView());
      await page.screenshot({ path: join(shots, "evaluation-key-issued-phone.png") });
    } finally {
      await page.setViewportSize({ width: 1280, height: 900 });
    }
    assert.deepEqual(unexpectedProblems(), []);
  });

  test("the key verifies a bundle over POST /verify: from this test, and from the page's server check", async () => {
    assert.deepEqual(await verifyDirectly(issuedKey), { status: 200, verdict: "TRUSTED" });

    await page.click("#key-issued .issued .issued__use-button");
    assert.match(
      (await page.textContent("#key-issued .issued .issued__use")) ?? "",
      /memory and forgotten when you leave or reload/,
    );
    await page.click("#key-issued .issued .issued__use button");
    assert.equal(await page.getAttribute("#tab-bundle", "aria-selected"), "true");

    const transfer = await page.evaluateHandle(
      ({ base64 }) => {
        const data = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
        const dataTransfer = new DataTransfer();
        dataTransfer.items.add(new File([data], "02_happy_full.json"));
        return dataTransfer;
      },
      { base64: corpusBytes(`vectors/${BUNDLE}`).toString("base64") },
    );
    await page.dispatchEvent(".drop:has(#bundle-file)", "drop", { dataTransfer: transfer });
    await page.waitForSelector("#bundle-verdict[data-verdict=TRUSTED]");
    assert.equal(await page.inputValue("#server-key"), issuedKey, "the field holds the key");
    assert.match(
      (await page.textContent("#server-key-source")) ?? "",
      /evaluation key you got on this page/,
    );
    const before = requests.length;
    await page.click("#server-form button[type=submit]");
    await page.waitForSelector("#server-agreement");
    assert.match(
      (await page.textContent("#server-agreement")) ?? "",
      /verdict is TRUSTED, with the same errors, reasons and summary/,
    );
    const posted = requests.slice(before).filter((request) => request.method() === "POST");
    assert.equal(posted.length, 1);
    assert.equal(pathOf(posted[0]!), "/verify");
    assert.equal(posted[0]!.headers().authorization, `Bearer ${issuedKey}`);

    assert.deepEqual(await storage(page), { local: "{}", session: "{}", cookie: "" });
    assert.deepEqual(unexpectedProblems(), []);
  });

  test("a second key from the same address is refused: evaluation_limit_reached, in words, with Retry-After", async () => {
    await page.click("#tab-key");
    assert.equal(await page.textContent("#key-submit"), "Get another evaluation key");
    const answered = page.waitForResponse(
      (response) => pathOf(response.request()) === "/keys/evaluation",
    );
    await page.click("#key-submit");
    const response = await answered;
    assert.equal(response.status(), 429);
    const retryAfter = Number(response.headers()["retry-after"]);
    assert.ok(Number.isInteger(retryAfter) && retryAfter > 0 && retryAfter <= 86_400);

    const refusal = page.locator("#key-refusal[data-code=evaluation_limit_reached]");
    await refusal.waitFor();
    assert.equal(await refusal.getAttribute("data-status"), "429");
    const text = (await refusal.textContent()) ?? "";
    assert.match(text, /No key: This address has already had 1 evaluation key today/);
    assert.match(text, /More in .+, from 00:00 UTC/);
    assert.match(
      text,
      /evaluation_limit_reached · HTTP 429 · Retry-After: [\d,]+ s \(\d{4}-\d\d-\d\d 00:00 UTC\)/,
    );
    assert.match(
      text,
      /The service says: this client address has obtained 1 evaluation key\(s\) today/,
    );
    assert.equal(
      await page.evaluate(() =>
        document.querySelector("#key-status")?.contains(document.querySelector("#key-refusal")),
      ),
      true,
      "the refusal is in the live region",
    );
    // The key shown before is still there (it cannot be shown again), and still only once.
    assert.equal(await page.locator("#key-issued .issued").count(), 1);
    assert.equal(await page.locator("#key-submit").isEnabled(), true);
    await page.screenshot({ path: join(shots, "evaluation-key-refused.png"), fullPage: true });

    // The same asked directly: the limit is the address's, whoever asks from it.
    const challenge = (await (await fetch(`${main.origin}/keys/evaluation/challenge`)).json()) as {
      challenge: string;
      difficulty: number;
    };
    const nonce = solveProofOfWork(nodeSha256, challenge.challenge, challenge.difficulty);
    const direct = await fetch(`${main.origin}/keys/evaluation`, {
      method: "POST",
      body: JSON.stringify({ challenge: challenge.challenge, nonce }),
    });
    assert.equal(direct.status, 429);
    assert.equal(((await direct.json()) as { error: string }).error, "evaluation_limit_reached");
    assert.deepEqual(unexpectedProblems([/status of 429 \(Too Many Requests\)/]), []);
  });

  test("cancel stops the proof of work, keeps the page responsive, and asks for no key", async () => {
    const other = await openPage(slow.origin);
    try {
      await other.click("#tab-key");
      await other.waitForSelector("#key-terms-list");
      assert.match((await other.textContent("#key-terms-list")) ?? "", /32 bits/);
      await other.click("#key-submit");
      await other.waitForFunction(() =>
        document.querySelector("#key-progress-text")?.textContent?.includes("hashes tried"),
      );
      assert.equal(await other.isVisible("#key-progress"), true);
      assert.match((await other.textContent("#key-status")) ?? "", /Solving the proof of work/);
      assert.equal(await other.evaluate(() => document.activeElement?.id), "key-cancel");
      assert.equal(await other.locator("#key-submit").isDisabled(), true);
      // The click is handled while the work runs: the page is not frozen.
      await other.click("#key-cancel");
      await other.waitForSelector("#key-refusal[data-code=cancelled]");
      assert.equal(await other.isVisible("#key-cancel"), false);
      assert.equal(await other.isVisible("#key-progress"), false);
      assert.equal(await other.locator("#key-submit").isEnabled(), true);
      assert.deepEqual(
        requests
          .filter((request) => request.url().startsWith(slow.origin))
          .filter((request) => request.method() !== "GET"),
        [],
        "no key was asked for",
      );
    } finally {
      await other.close();
    }
    assert.deepEqual(unexpectedProblems([/status of 429 \(Too Many Requests\)/]), []);
  });

  test("a service with evaluation keys off: the tab says so and offers no form", async () => {
    const other = await openPage(off.origin);
    try {
      await other.click("#tab-key");
      await other.waitForSelector("#key-unavailable[data-state=off]");
      assert.match(
        (await other.textContent("#key-unavailable")) ?? "",
        /does not issue evaluation keys: its operator switched them off/,
      );
      assert.equal(await other.isVisible("#key-form"), false);
    } finally {
      await other.close();
    }
  });

  test("offline: the terms cannot be read and the page says why; back online it reads them", async () => {
    const other = await openPage(main.origin);
    await browser.context.setOffline(true);
    try {
      await other.click("#tab-key");
      await other.waitForSelector("#key-unavailable[data-state=unreachable]");
      assert.match((await other.textContent("#key-unavailable")) ?? "", /GET \/info got no answer/);
      assert.equal(await other.isVisible("#key-form"), false);
    } finally {
      await browser.context.setOffline(false);
    }
    try {
      await other.waitForSelector("#key-terms-list");
      assert.equal(await other.isVisible("#key-form"), true);
    } finally {
      await other.close();
    }
    assert.deepEqual(
      unexpectedProblems([/status of 429 \(Too Many Requests\)/, /net::ERR_INTERNET_DISCONNECTED/]),
      [],
    );
  });
});
