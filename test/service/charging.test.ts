/**
 * What a call costs (service.md §9: "429s and errors are never billed"): only a result — a 2xx,
 * whatever its verdict — is charged to a daily cap and to the bill. Refusals (400, 401, 402,
 * 404, 413, 429, 503 overloaded) give their place in the cap back, and the audit lines they
 * leave are never billed. Over real sockets, in embedded mode and against the Redis cap store;
 * the 503s come from a gated task module, so which request is shed does not depend on timing.
 */
import assert from "node:assert/strict";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { BroadcastChannel } from "node:worker_threads";
import { meterMonth } from "../../src/access/billing.js";
import type { ConfigOverrides } from "../../src/service/config.js";
import { keysUnder, openTestRedis, randomPrefix, SHARED_REDIS_URL } from "../redis/support.js";
import { corpusBytes } from "../support/corpus.js";
import { GATE_CHANNEL, GATE_OPEN, TASK_WAITING } from "./fixtures/verify-gate.js";
import { fixtureTaskModule, startTestService, type TestService } from "./support/service.js";

const TRUSTED = corpusBytes("vectors/01_happy_minimal.json");
const UNTRUSTED = corpusBytes("vectors/03_tampered_body.json");
const NOW = Date.UTC(2026, 10, 21, 12, 0, 0);
const MAX_BODY = 64 * 1024;

interface Sent {
  status: number;
  remaining: string | null;
  json: Record<string, unknown>;
}

function chargingSuite(mode: string, overrides: () => ConfigOverrides, cleanup: () => unknown) {
  describe(`charging (${mode})`, () => {
    let service: TestService;
    let base: string;
    let gate: BroadcastChannel;
    let gateOpen = true;

    before(async () => {
      gate = new BroadcastChannel(GATE_CHANNEL);
      gate.onmessage = (event) => {
        if (gateOpen && (event as MessageEvent).data === TASK_WAITING) gate.postMessage(GATE_OPEN);
      };
      service = await startTestService(
        {
          ...overrides(),
          limits: { maxBodyBytes: MAX_BODY, anonymousDailyCap: 5 },
          cpuPool: {
            threads: 1,
            maxQueue: 1,
            taskModules: { verify: fixtureTaskModule("gated-verify-worker") },
          },
        },
        { clock: () => NOW, anonymous: true },
      );
      await service.app.listen({ port: 0, host: "127.0.0.1" });
      base = `http://127.0.0.1:${(service.app.server.address() as AddressInfo).port}`;
    });
    after(async () => {
      gate.close();
      await service.close();
      await cleanup();
    });

    const send = async (
      path: string,
      init: { method?: string; headers?: Record<string, string>; body?: Buffer | string } = {},
    ): Promise<Sent> => {
      const response = await fetch(`${base}${path}`, {
        method: init.method ?? "GET",
        headers: init.headers,
        body: init.body,
      });
      const text = await response.text();
      return {
        status: response.status,
        remaining: response.headers.get("x-ratelimit-remaining"),
        json: text === "" ? {} : (JSON.parse(text) as Record<string, unknown>),
      };
    };
    const verify = (key: string, body: Buffer | string) =>
      send("/verify", { method: "POST", headers: { "x-svc-key": key }, body });

    test("results are charged, refusals are not, and only results are billed", async () => {
      const { key, record } = await service.app.accessServices.keys.create({
        name: `charged-${mode.replace(/\W/g, "-")}`,
        dailyCap: 100,
      });
      const statuses: number[] = [];
      const expectRemaining = async (sent: Promise<Sent>, status: number, remaining: string) => {
        const answer = await sent;
        statuses.push(answer.status);
        assert.equal(answer.status, status, JSON.stringify(answer.json));
        assert.equal(answer.remaining, remaining);
        return answer;
      };

      const trusted = await expectRemaining(verify(key, TRUSTED), 200, "99");
      assert.equal(trusted.json.verdict, "TRUSTED");
      // An UNTRUSTED verdict is a result: the verification was done.
      const untrusted = await expectRemaining(verify(key, UNTRUSTED), 200, "98");
      assert.equal(untrusted.json.verdict, "UNTRUSTED");
      // Each refusal says what the bucket holds without it.
      const invalid = await expectRemaining(verify(key, '{"a":1,"a":2}'), 400, "98");
      assert.equal(invalid.json.error, "invalid_json");
      const large = await expectRemaining(verify(key, Buffer.alloc(MAX_BODY + 1, 32)), 413, "98");
      assert.equal(large.json.error, "body_too_large");

      // One request holds the thread and one the queue slot, and neither can finish while the
      // gate is shut: the first answer of three is necessarily the one shed with 503.
      gateOpen = false;
      const three = [0, 1, 2].map(() => verify(key, TRUSTED));
      const shed = await Promise.race(three);
      assert.equal(shed.status, 503);
      assert.deepEqual(shed.json, { error: "overloaded" });
      gateOpen = true;
      gate.postMessage(GATE_OPEN);
      const answered = await Promise.all(three);
      statuses.push(...answered.map((answer) => answer.status));
      assert.deepEqual(answered.map((answer) => answer.status).sort(), [200, 200, 503]);

      // 2 + 2 results so far: the next result leaves 95.
      await expectRemaining(verify(key, TRUSTED), 200, "95");
      const charged = statuses.filter((status) => status >= 200 && status < 300).length;
      assert.equal(charged, 5);

      await service.app.accessServices.audit.flush();
      const usage = await meterMonth(service.config.auditDir, "2026-11");
      const line = usage.keys.find((entry) => entry.keyId === record.id);
      assert.deepEqual(
        { calls: line?.calls, unbilled: line?.unbilled },
        { calls: 5, unbilled: statuses.length - 5 },
      );
    });

    test("a cap is never exceeded while refusals hold and give back places", async () => {
      const { key } = await service.app.accessServices.keys.create({
        name: `racing-${mode.replace(/\W/g, "-")}`,
        dailyCap: 6,
      });
      // Refusals (413, and 503 from the one-slot pool) race results for a cap of 6.
      const racing = await Promise.all(
        Array.from({ length: 24 }, (_, n) =>
          n % 2 === 0 ? verify(key, TRUSTED) : verify(key, Buffer.alloc(MAX_BODY + 1, 32)),
        ),
      );
      const results = racing.filter((answer) => answer.status === 200).length;
      assert.ok(results <= 6, `${results} results for a cap of 6`);
      for (const answer of racing) assert.ok([200, 413, 429, 503].includes(answer.status));
      // Every refusal gave its place back: exactly the rest of the cap is still there.
      let more = 0;
      for (let attempt = 0; attempt < 10; attempt += 1) {
        const answer = await verify(key, TRUSTED);
        if (answer.status === 429) break;
        assert.equal(answer.status, 200);
        more += 1;
      }
      assert.equal(results + more, 6);
    });

    test("keyless refusals (400, 404) do not spend the anonymous bucket", async () => {
      const first = await send("/notarize");
      assert.equal(first.status, 200);
      const before = Number(first.remaining);
      const malformed = await send("/receipts/0xnot-a-hash");
      assert.equal(malformed.status, 400);
      const missing = await send(`/receipts/0x${"ab".repeat(32)}`);
      assert.equal(missing.status, 404);
      assert.equal(missing.remaining, String(before));
      // An unknown key is refused before any bucket is known: nothing is counted anywhere.
      const unknown = await send("/notarize", {
        headers: { "x-svc-key": `svc_${"0".repeat(48)}` },
      });
      assert.equal(unknown.status, 401);
      const next = await send("/notarize");
      assert.equal(next.remaining, String(before - 1));
    });
  });
}

chargingSuite(
  "embedded",
  () => ({}),
  () => {},
);

const prefix = randomPrefix();
chargingSuite(
  "Redis cap store",
  () => ({ redisUrl: SHARED_REDIS_URL, redisPrefix: prefix }),
  async () => {
    const connection = await openTestRedis(prefix);
    const keys = await keysUnder(connection.client, prefix);
    if (keys.length > 0) await connection.client.unlink(...keys);
    await connection.close();
  },
);
