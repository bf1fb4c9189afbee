/**
 * Charges that follow cost (issue 32), over real sockets, in embedded mode and against the
 * Redis cap store that distributed mode shares: a request is counted before its signatures
 * (cost.ts), charged the units its estimate comes to (the rate-limit headers
 * show them), refused up front with `cost_exceeds_cap` when its cap has not got them, and a
 * task cut by the work deadline is charged by its run time instead of being a free 503.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { distinctIssuersBundle } from "../../bench/fixtures.js";
import type { ConfigOverrides } from "../../src/service/config.js";
import { countVerificationCost, UNIT_CPU_MS, unitsOf } from "../../src/service/cost.js";
import { parseJson } from "../../src/verifier/json/parse.js";
import { keysUnder, openTestRedis, randomPrefix, SHARED_REDIS_URL } from "../redis/support.js";
import { corpusBytes } from "../support/corpus.js";
import { SPIN_MARKER } from "./fixtures/spin-signal.js";
import { fixtureTaskModule, startTestService, type TestService } from "./support/service.js";

const TRUSTED = corpusBytes("vectors/02_happy_full.json");
/** About 1 MiB of receipts under distinct keys: an honest body, but heavier than one unit. */
const HEAVY = distinctIssuersBundle(1_000_000);
const HEAVY_UNITS = unitsOf(countVerificationCost([parseJson(HEAVY)], HEAVY.length));
const DEADLINE_MS = 1500;

interface Sent {
  status: number;
  remaining: number;
  rateLimit: string | null;
  json: Record<string, unknown>;
}

function costSuite(mode: string, overrides: () => ConfigOverrides, cleanup: () => unknown) {
  describe(`charges follow cost (${mode})`, () => {
    let service: TestService;
    let base: string;
    // A second service whose verify worker spins on request, with a short deadline: the heavy
    // bodies above must not meet that deadline on a loaded machine.
    let spinning: TestService;
    let spinningBase: string;

    const listen = async (started: TestService) => {
      await started.app.listen({ port: 0, host: "127.0.0.1" });
      return `http://127.0.0.1:${(started.app.server.address() as AddressInfo).port}`;
    };
    before(async () => {
      service = await startTestService(
        { ...overrides(), limits: { maxBodyBytes: 1_100_000 } },
        { anonymous: true },
      );
      base = await listen(service);
      spinning = await startTestService(
        {
          ...overrides(),
          cpuPool: {
            threads: 1,
            taskDeadlineMs: DEADLINE_MS,
            taskModules: { verify: fixtureTaskModule("spinning-verify-worker") },
          },
        },
        { anonymous: true },
      );
      spinningBase = await listen(spinning);
    });
    after(async () => {
      await service.close();
      await spinning.close();
      await cleanup();
    });

    const post = async (
      path: string,
      key: string,
      body: Buffer | string,
      headers: Record<string, string> = {},
    ): Promise<Sent> => postTo(base, path, key, body, headers);
    const postTo = async (
      at: string,
      path: string,
      key: string,
      body: Buffer | string,
      headers: Record<string, string> = {},
    ): Promise<Sent> => {
      const response = await fetch(`${at}${path}`, {
        method: "POST",
        headers: { "x-svc-key": key, "content-type": "application/json", ...headers },
        body,
      });
      const text = await response.text();
      return {
        status: response.status,
        remaining: Number(response.headers.get("x-ratelimit-remaining")),
        rateLimit: response.headers.get("ratelimit"),
        json: JSON.parse(text) as Record<string, unknown>,
      };
    };
    const verify = (key: string, body: Buffer | string) => post("/verify", key, body);
    const callVerifyBundle = (key: string, bundle: Buffer) =>
      post(
        "/mcp",
        key,
        `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"verify_bundle","arguments":{"bundle":${bundle.toString("utf8")}}}}`,
        { accept: "application/json, text/event-stream" },
      );
    const validate = (key: string, bundle: Buffer) => {
      const taskId = (JSON.parse(bundle.toString("utf8")) as { task_id: string }).task_id;
      const taskHash = `sha256:${createHash("sha256").update(taskId).digest("hex")}`;
      const head = JSON.stringify({ request_id: `0x${"5a".repeat(32)}`, task_hash: taskHash });
      return post("/erc8004/validate", key, `${head.slice(0, -1)},"bundle":${bundle}}`);
    };
    const keyWithCap = async (name: string, dailyCap: number, on = service) =>
      (
        await on.app.accessServices.keys.create({
          name: `${name}-${mode.replace(/\W/g, "-")}`,
          dailyCap,
        })
      ).key;

    test("the heavy body is estimated past one unit, and a normal bundle at one", () => {
      assert.ok(HEAVY_UNITS >= 2, `${HEAVY_UNITS} units`);
      assert.equal(unitsOf(countVerificationCost([parseJson(TRUSTED)], TRUSTED.length)), 1);
    });

    test("a normal bundle is one unit; a heavy one is charged its units, shown in RateLimit", {
      timeout: 60_000,
    }, async () => {
      const key = await keyWithCap("heavy", 100);
      const normal = await verify(key, TRUSTED);
      assert.equal(normal.status, 200);
      assert.equal(normal.json.verdict, "TRUSTED");
      assert.equal(normal.remaining, 99);
      const heavy = await verify(key, HEAVY);
      assert.equal(heavy.status, 200, JSON.stringify(heavy.json).slice(0, 200));
      assert.equal(heavy.json.verdict, "UNTRUSTED");
      assert.equal(heavy.remaining, 99 - HEAVY_UNITS);
      assert.equal(heavy.rateLimit?.split(";")[1], `r=${99 - HEAVY_UNITS}`);
      // The cap store holds what the headers said: the next request sees it.
      const next = await verify(key, TRUSTED);
      assert.equal(next.remaining, 98 - HEAVY_UNITS);
    });

    test("a body whose estimate the cap cannot pay is refused up front, and not charged", {
      timeout: 60_000,
    }, async () => {
      const key = await keyWithCap("short", HEAVY_UNITS - 1);
      const refused = await verify(key, HEAVY);
      assert.equal(refused.status, 429);
      assert.equal(refused.json.error, "cost_exceeds_cap");
      assert.equal(refused.json.limit, HEAVY_UNITS - 1);
      assert.match(String(refused.json.detail), new RegExp(`costs? ${HEAVY_UNITS} units`));
      // Its held unit was given back: the whole cap is still there for normal requests.
      assert.equal(refused.remaining, HEAVY_UNITS - 1);
      const normal = await verify(key, TRUSTED);
      assert.equal(normal.status, 200);
      assert.equal(normal.remaining, HEAVY_UNITS - 2);
    });

    test("MCP verify_bundle and the ERC-8004 evaluation are charged the same way", {
      timeout: 60_000,
    }, async () => {
      const key = await keyWithCap("shared", 100);
      const normalCall = await callVerifyBundle(key, TRUSTED);
      assert.equal(normalCall.status, 200);
      assert.equal(normalCall.remaining, 99);
      const heavyCall = await callVerifyBundle(key, HEAVY);
      assert.equal(heavyCall.status, 200);
      assert.equal(heavyCall.remaining, 99 - HEAVY_UNITS);
      const evaluation = await validate(key, HEAVY);
      assert.equal(evaluation.status, 200, JSON.stringify(evaluation.json).slice(0, 200));
      assert.equal(evaluation.json.verdict, "UNTRUSTED");
      assert.equal(evaluation.remaining, 99 - 2 * HEAVY_UNITS);

      const short = await keyWithCap("shared-short", HEAVY_UNITS - 1);
      for (const refused of [await callVerifyBundle(short, HEAVY), await validate(short, HEAVY)]) {
        assert.equal(refused.status, 429);
        assert.equal(refused.json.error, "cost_exceeds_cap");
        assert.equal(refused.remaining, HEAVY_UNITS - 1);
      }
    });

    test("a task cut by the deadline is charged by its run time", {
      timeout: 60_000,
    }, async () => {
      const key = await keyWithCap("deadline", 100, spinning);
      const verifySpinning = (body: Buffer | string) => postTo(spinningBase, "/verify", key, body);
      const cut = await verifySpinning(SPIN_MARKER);
      assert.equal(cut.status, 503);
      assert.deepEqual(cut.json, { error: "work_limit_exceeded", limit: DEADLINE_MS });
      // It ran about the whole deadline on a thread: charged at least that many units' worth.
      const atLeast = Math.floor(DEADLINE_MS / UNIT_CPU_MS) - 1;
      assert.ok(100 - cut.remaining >= atLeast, `charged ${100 - cut.remaining} units`);
      const next = await verifySpinning(TRUSTED);
      assert.equal(next.status, 200);
      assert.equal(next.remaining, cut.remaining - 1);
    });
  });
}

costSuite(
  "embedded",
  () => ({}),
  () => {},
);

const prefix = randomPrefix();
costSuite(
  "Redis cap store",
  () => ({ redisUrl: SHARED_REDIS_URL, redisPrefix: prefix }),
  async () => {
    const connection = await openTestRedis(prefix);
    const keys = await keysUnder(connection.client, prefix);
    if (keys.length > 0) await connection.client.unlink(...keys);
    await connection.close();
  },
);
