/**
 * Redis going away under a distributed instance (a private redis-server, killed and restarted
 * — never the shared one): verification keeps answering (caps fall back to per-process
 * counts), `/health` says Redis is down but stays 200, paid requests are refused with 503
 * (a replay cannot be ruled out without the nonce ledger), and all of it recovers when Redis
 * is back.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { startFacilitatorPeer } from "../../src/payments/facilitator-peer.js";
import { requirementFromWire } from "../../src/payments/requirements.js";
import { fromPlain, isObject } from "../../src/verifier/json/value.js";
import {
  fromHeader,
  NOW_MS,
  signAuthorization,
  testSettings,
  toHeader,
  v2Payment,
  wallet,
} from "../payments/support.js";
import { type PrivateRedis, randomPrefix, startPrivateRedis } from "../redis/support.js";
import { startTestService, type TestService } from "../service/support/service.js";
import { corpusBytes } from "../support/corpus.js";

const GOOD = corpusBytes("vectors/01_happy_minimal.json");

describe("a Redis outage under load", () => {
  let redis: PrivateRedis;
  let peer: { url: string; close(): Promise<void> };
  let service: TestService;
  const payer = wallet();

  before(async () => {
    redis = await startPrivateRedis();
    peer = await startFacilitatorPeer({ clock: () => NOW_MS });
    service = await startTestService(
      {
        redisUrl: redis.url,
        redisPrefix: randomPrefix(),
        payments: {
          settings: testSettings(),
          facilitatorUrl: peer.url,
          publicBaseUrl: "https://receiptd.example",
        },
      },
      { clock: () => NOW_MS },
    );
  });
  after(async () => {
    await service.close();
    await peer.close();
    await redis.stop();
  });

  const verify = (headers: Record<string, string> = {}) =>
    service.app.inject({ method: "POST", url: "/verify", headers, payload: GOOD });

  async function payment(): Promise<Record<string, string>> {
    // A non-Bearer Authorization is no key, and keeps the test service's own key off.
    const challenge = await service.app.inject({
      method: "POST",
      url: "/verify",
      headers: { authorization: "Basic none" },
      payload: GOOD,
    });
    assert.equal(challenge.statusCode, 402);
    const offer = (
      fromHeader(String(challenge.headers["payment-required"])) as {
        accepts: unknown[];
      }
    ).accepts[0];
    const wire = fromPlain(offer);
    assert.ok(isObject(wire));
    const signed = await signAuthorization(payer, requirementFromWire(wire, 2));
    return { "payment-signature": toHeader(v2Payment(wire, signed)) };
  }

  test("verification keeps answering, payments pause, both recover", async () => {
    assert.equal((await verify()).statusCode, 200);
    assert.equal((await verify(await payment())).statusCode, 200);

    await redis.stop();
    const during = await Promise.all(Array.from({ length: 20 }, () => verify()));
    assert.deepEqual(
      during.map((response) => response.statusCode),
      Array(20).fill(200),
    );
    for (const response of during) assert.ok(response.headers["x-ratelimit-remaining"]);
    const health = await service.app.inject({ method: "GET", url: "/health" });
    assert.equal(health.statusCode, 200);
    assert.deepEqual(health.json(), { ok: true, redis: "down" });
    const paid = await verify(await payment());
    assert.equal(paid.statusCode, 503);
    assert.deepEqual(paid.json(), { error: "nonce_ledger_unavailable" });
    assert.equal(paid.headers["retry-after"], "1");

    await redis.start();
    let recovered = false;
    for (let attempt = 0; attempt < 100 && !recovered; attempt += 1) {
      const health = await service.app.inject({ method: "GET", url: "/health" });
      recovered = health.json().redis === "up";
      if (!recovered) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.ok(recovered, "Redis came back");
    assert.equal((await verify(await payment())).statusCode, 200);
    assert.equal((await verify()).statusCode, 200);
  });
});
