/**
 * Issue 28 over real sockets, embedded and distributed: the IETF rate-limit fields agree with
 * `X-RateLimit-*` and parse as structured fields; `Idempotency-Key` gives a retry the first
 * answer, charged once (a dropped connection, a paid `/verify` re-sending its spent
 * authorization), refuses a reused key (422), a key in flight (409) and a malformed key
 * (400), and never shares entries between principals. Payments go through the local
 * facilitator peer; `/verify` runs on the gated task module, so "in flight" is not a race.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { type AddressInfo, connect } from "node:net";
import { after, before, describe, test } from "node:test";
import { BroadcastChannel } from "node:worker_threads";
import type { PrivateKeyAccount } from "viem/accounts";
import { meterMonth } from "../../../src/access/billing.js";
import { keyPrincipal, x402Principal } from "../../../src/access/principal.js";
import { sealCrystal, tenantHashOf } from "../../../src/crystals/client.js";
import { startFacilitatorPeer } from "../../../src/payments/facilitator-peer.js";
import { requirementFromWire } from "../../../src/payments/requirements.js";
import type { ConfigOverrides } from "../../../src/service/config.js";
import { fromPlain, isObject } from "../../../src/verifier/json/value.js";
import {
  fromHeader,
  NOW_MS,
  signAuthorization,
  testSettings,
  toHeader,
  v2Payment,
  wallet,
} from "../../payments/support.js";
import { keysUnder, openTestRedis, randomPrefix, SHARED_REDIS_URL } from "../../redis/support.js";
import { corpusBytes } from "../../support/corpus.js";
import { GATE_CHANNEL, GATE_OPEN, TASK_WAITING } from "../fixtures/verify-gate.js";
import { fixtureTaskModule, startTestService, type TestService } from "../support/service.js";

/** Whether a suite kept answers (its Redis cleanup then checks how they were stored). */
let keptAnswers = false;

const GOOD = corpusBytes("vectors/01_happy_minimal.json");
const OTHER = corpusBytes("vectors/03_tampered_body.json");

interface OpenApiOperation {
  parameters?: { in: string; name: string }[];
  responses?: Record<string, { description?: string; headers?: Record<string, unknown> }>;
}

interface Answer {
  status: number;
  headers: Headers;
  text: string;
}

/** An sf-item of RFC 9651 whose value is an sf-string and whose parameters are integers. */
interface RateLimitItem {
  id: string;
  params: Record<string, number>;
}

/** Parses the one item the service sends; anything else in the field fails the test. */
function parseRateLimitItem(field: string | null): RateLimitItem {
  assert.ok(field !== null, "the field is sent");
  const match = /^"((?:[^"\\]|\\["\\])*)"((?:;[a-z*][a-z0-9_.*-]*=-?\d{1,15})*)$/.exec(field);
  assert.ok(match, `not an sf-item with an sf-string and integer parameters: ${field}`);
  const params: Record<string, number> = {};
  for (const param of (match[2] ?? "").split(";").slice(1)) {
    const [name = "", value = ""] = param.split("=");
    assert.equal(params[name], undefined, `parameter ${name} repeated`);
    params[name] = Number(value);
  }
  return { id: (match[1] ?? "").replace(/\\(["\\])/g, "$1"), params };
}

/** The IETF fields say what the trio says. */
function assertFieldsAgree(answer: Answer, id: string): void {
  const policy = parseRateLimitItem(answer.headers.get("ratelimit-policy"));
  const state = parseRateLimitItem(answer.headers.get("ratelimit"));
  assert.equal(policy.id, id);
  assert.equal(state.id, id);
  assert.deepEqual(policy.params, {
    q: Number(answer.headers.get("x-ratelimit-limit")),
    w: 86_400,
  });
  assert.deepEqual(state.params, {
    r: Number(answer.headers.get("x-ratelimit-remaining")),
    t: Number(answer.headers.get("x-ratelimit-reset")),
  });
}

function sealFresh(): string {
  const tenantHash = tenantHashOf(`idempotency test ${randomBytes(8).toString("hex")}`);
  return JSON.stringify(
    sealCrystal({
      plaintext: randomBytes(64),
      key: randomBytes(32),
      tenantHash,
      createdAt: "2030-01-01T00:00:00Z",
    }),
  );
}

function idempotencySuite(mode: string, overrides: () => ConfigOverrides, cleanup: () => unknown) {
  describe(`Idempotency-Key and the RateLimit fields (${mode})`, () => {
    let peer: { url: string; close(): Promise<void> };
    let service: TestService;
    let port: number;
    let gate: BroadcastChannel;
    let gateOpen = true;
    let waiting: (() => void) | null = null;
    const payer: PrivateKeyAccount = wallet();

    before(async () => {
      gate = new BroadcastChannel(GATE_CHANNEL);
      gate.onmessage = (event) => {
        if ((event as MessageEvent).data !== TASK_WAITING) return;
        if (gateOpen) gate.postMessage(GATE_OPEN);
        else waiting?.();
      };
      peer = await startFacilitatorPeer({ clock: () => NOW_MS });
      service = await startTestService(
        {
          ...overrides(),
          payments: {
            settings: testSettings(),
            facilitatorUrl: peer.url,
            publicBaseUrl: "https://receiptd.example",
          },
          cpuPool: {
            threads: 1,
            maxQueue: 4,
            taskModules: { verify: fixtureTaskModule("gated-verify-worker") },
          },
        },
        { clock: () => NOW_MS, anonymous: true },
      );
      await service.app.listen({ port: 0, host: "127.0.0.1" });
      port = (service.app.server.address() as AddressInfo).port;
    });
    after(async () => {
      gate.close();
      await service.close();
      await peer.close();
      await cleanup();
    });

    const send = async (
      path: string,
      init: { method?: string; headers?: Record<string, string>; body?: Buffer | string } = {},
    ): Promise<Answer> => {
      const response = await fetch(`http://127.0.0.1:${port}${path}`, {
        method: init.method ?? "GET",
        headers: init.headers,
        body: init.body,
      });
      return { status: response.status, headers: response.headers, text: await response.text() };
    };
    const newKey = async (name: string) => {
      const { key, record } = await service.app.accessServices.keys.create({
        name: `${name}-${randomBytes(4).toString("hex")}`,
        dailyCap: 100,
      });
      return { key, principal: keyPrincipal(record.id) };
    };
    const counted = (bucket: string) => service.app.accessServices.caps.count(bucket, NOW_MS);
    const postCrystal = (key: string, body: string, headers: Record<string, string> = {}) =>
      send("/crystals", {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${key}`, ...headers },
        body,
      });
    const settled = async () => {
      const { values } = await service.app.metrics.payments.get();
      return values.find((value) => value.labels.outcome === "settled")?.value ?? 0;
    };
    /** A v2 payment for `/verify`, read from its challenge as a client does. */
    const payment = async (): Promise<Record<string, string>> => {
      const challenge = await send("/verify", { method: "POST", body: GOOD });
      assert.equal(challenge.status, 402);
      const wire = fromPlain(
        (fromHeader(String(challenge.headers.get("payment-required"))) as { accepts: unknown[] })
          .accepts[0],
      );
      assert.ok(isObject(wire));
      const signed = await signAuthorization(payer, requirementFromWire(wire, 2));
      return { "payment-signature": toHeader(v2Payment(wire, signed)) };
    };
    const paidVerify = (headers: Record<string, string>, body: Buffer = GOOD) =>
      send("/verify", { method: "POST", headers, body });

    test("RateLimit-Policy and RateLimit say what X-RateLimit-* say, refunds included", async () => {
      const anonymous = await send("/notarize");
      assert.equal(anonymous.status, 200);
      // An anonymous call is shown its address's share (the bucket that refuses first).
      assertFieldsAgree(anonymous, "anonymous-address");
      const { key } = await newKey("fields");
      const stored = await postCrystal(key, sealFresh());
      assert.equal(stored.status, 201, stored.text);
      assertFieldsAgree(stored, "key");
      assert.equal(stored.headers.get("x-ratelimit-remaining"), "99");
      // A refusal gives its place back, and both spellings say so.
      const refused = await postCrystal(key, "{}");
      assert.equal(refused.status, 400);
      assertFieldsAgree(refused, "key");
      assert.equal(refused.headers.get("x-ratelimit-remaining"), "99");
      // A paid call is counted against its payer.
      const paid = await paidVerify(await payment());
      assert.equal(paid.status, 200, paid.text);
      assertFieldsAgree(paid, "x402");
      // The policy names a kind of bucket, never the key id or the payer.
      for (const answer of [stored, paid]) {
        const fields = `${answer.headers.get("ratelimit-policy")} ${answer.headers.get("ratelimit")}`;
        assert.doesNotMatch(fields, /0x|key:|svc_/i);
      }
    });

    test("a retry after a dropped connection gets the first answer, charged once", async () => {
      const { key, principal } = await newKey("dropped");
      const body = sealFresh();
      const request =
        "POST /crystals HTTP/1.1\r\nHost: receiptd.test\r\nContent-Type: application/json\r\n" +
        `Authorization: Bearer ${key}\r\nIdempotency-Key: retry-after-drop\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
      const socket = connect({ port, host: "127.0.0.1" });
      await once(socket, "connect");
      socket.on("error", () => {});
      socket.write(request);
      // The answer has arrived; the client goes away without reading it.
      await once(socket, "readable");
      socket.destroy();

      const retry = await postCrystal(key, body, { "idempotency-key": "retry-after-drop" });
      assert.equal(retry.status, 201, retry.text);
      assert.equal(retry.headers.get("idempotent-replayed"), "true");
      assert.equal(retry.headers.get("idempotency-key"), "retry-after-drop");
      assert.equal(retry.headers.get("content-type"), "application/json; charset=utf-8");
      assert.match(String(retry.headers.get("location")), /^\/crystals\/sha256:[0-9a-f]{64}\?/);
      assert.equal(JSON.parse(retry.text).stored, true);
      assert.equal(await counted(principal), 1);
      keptAnswers = true;
      // The replay's rate-limit headers are its own: nothing more was spent.
      assert.equal(retry.headers.get("x-ratelimit-remaining"), "99");
      assertFieldsAgree(retry, "key");
      // Without the key the same write is idempotent by content (200), but charged again.
      const again = await postCrystal(key, body);
      assert.equal(again.status, 200, again.text);
      assert.equal(again.headers.get("idempotent-replayed"), null);
      assert.equal(await counted(principal), 2);
      // The replay is not billed either.
      await service.app.accessServices.audit.flush();
      const usage = await meterMonth(service.config.auditDir, "2026-01");
      const line = usage.keys.find((entry) => `key:${entry.keyId}` === principal);
      assert.deepEqual({ calls: line?.calls, unbilled: line?.unbilled }, { calls: 2, unbilled: 1 });
    });

    test("the same key with another body is 422; a malformed key is 400", async () => {
      const { key, principal } = await newKey("reused");
      const first = await postCrystal(key, sealFresh(), { "idempotency-key": "k-1" });
      assert.equal(first.status, 201, first.text);
      const reused = await postCrystal(key, sealFresh(), { "idempotency-key": "k-1" });
      assert.equal(reused.status, 422);
      assert.equal(JSON.parse(reused.text).error, "idempotency_key_reused");
      assert.equal(reused.headers.get("idempotency-key"), "k-1");
      for (const bad of ["has space", "x".repeat(256), "é"]) {
        const malformed = await postCrystal(key, sealFresh(), {
          "idempotency-key": Buffer.from(bad).toString("latin1"),
        });
        assert.equal(malformed.status, 400, bad);
        assert.equal(JSON.parse(malformed.text).error, "invalid_idempotency_key");
      }
      // 255 visible characters are a key.
      const longest = await postCrystal(key, sealFresh(), { "idempotency-key": "~".repeat(255) });
      assert.equal(longest.status, 201, longest.text);
      assert.equal(await counted(principal), 2);
    });

    test("keys are scoped by principal: another key's same Idempotency-Key is its own", async () => {
      const alice = await newKey("alice");
      const bob = await newKey("bob");
      const mine = await postCrystal(alice.key, sealFresh(), { "idempotency-key": "shared" });
      assert.equal(mine.status, 201);
      const theirs = await postCrystal(bob.key, sealFresh(), { "idempotency-key": "shared" });
      assert.equal(theirs.status, 201, theirs.text);
      assert.equal(theirs.headers.get("idempotent-replayed"), null);
      assert.equal(await counted(bob.principal), 1);
    });

    test("a paid /verify retried with its spent authorization settles once", async () => {
      const before = await settled();
      const pay = await payment();
      const first = await paidVerify({ ...pay, "idempotency-key": "paid-1" });
      assert.equal(first.status, 200, first.text);
      const receipt = first.headers.get("payment-response");
      assert.ok(receipt !== null);
      const retry = await paidVerify({ ...pay, "idempotency-key": "paid-1" });
      assert.equal(retry.status, 200, retry.text);
      assert.equal(retry.headers.get("idempotent-replayed"), "true");
      assert.equal(retry.headers.get("payment-response"), receipt);
      assert.equal(retry.text, first.text);
      assert.equal(await settled(), before + 1);
      // Other keys and bodies do not open the spent authorization: the ledger refuses it, or
      // (in Redis, where the tests' fixed clock lets reservations expire at once) the
      // facilitator does.
      const spent = /^(nonce_already_used|invalid_transaction_state)$/;
      const otherKey = await paidVerify({ ...pay, "idempotency-key": "paid-2" });
      assert.equal(otherKey.status, 402);
      assert.match(JSON.parse(otherKey.text).error, spent);
      const noKey = await paidVerify(pay);
      assert.match(JSON.parse(noKey.text).error, spent);
      const otherBody = await paidVerify({ ...pay, "idempotency-key": "paid-1" }, OTHER);
      assert.equal(otherBody.status, 422);
      assert.equal(await settled(), before + 1);
      // A fresh authorization with the same key is not taken either: the answer was paid.
      const fresh = await paidVerify({ ...(await payment()), "idempotency-key": "paid-1" });
      assert.equal(fresh.status, 200);
      assert.equal(fresh.headers.get("idempotent-replayed"), "true");
      assert.equal(await settled(), before + 1);
      // One call counted against the payer's cap in this test, whatever the retries.
      const payerCount = await counted(x402Principal(payer.address));
      assert.equal(fresh.headers.get("x-ratelimit-remaining"), String(1000 - payerCount));
    });

    test("a retry while the first is still running is 409, then gets the answer", async () => {
      const pay = { ...(await payment()), "idempotency-key": "slow" };
      gateOpen = false;
      const held = new Promise<void>((resolve) => {
        waiting = resolve;
      });
      const first = paidVerify(pay);
      await held;
      const concurrent = await paidVerify(pay);
      assert.equal(concurrent.status, 409, concurrent.text);
      assert.equal(JSON.parse(concurrent.text).error, "idempotency_key_in_flight");
      gateOpen = true;
      waiting = null;
      gate.postMessage(GATE_OPEN);
      assert.equal((await first).status, 200);
      const later = await paidVerify(pay);
      assert.equal(later.status, 200);
      assert.equal(later.headers.get("idempotent-replayed"), "true");
    });

    test("/openapi.json declares the request header, its refusals and the RateLimit fields", async () => {
      const document = JSON.parse((await send("/openapi.json")).text) as {
        paths: Record<string, Record<string, OpenApiOperation>>;
      };
      const takesKey = (path: string, method: string) =>
        (document.paths[path]?.[method]?.parameters ?? []).some(
          (parameter) => parameter.in === "header" && parameter.name === "Idempotency-Key",
        );
      for (const path of ["/anchors", "/crystals", "/verify"]) {
        assert.ok(takesKey(path, "post"), path);
        const responses = document.paths[path]?.post?.responses ?? {};
        assert.match(String(responses["422"]?.description), /idempotency_key_reused/);
        assert.match(String(responses["409"]?.description), /idempotency_key_in_flight/);
        assert.match(String(responses["400"]?.description), /invalid_idempotency_key/);
      }
      assert.equal(takesKey("/verify-anchor", "post"), false);
      for (const [path, methods] of Object.entries(document.paths)) {
        for (const [method, operation] of Object.entries(methods)) {
          const headers = operation.responses?.["429"]?.headers;
          if (headers === undefined) continue;
          assert.ok("X-RateLimit-Reset" in headers, `${method} ${path}`);
          assert.ok("RateLimit-Policy" in headers && "RateLimit" in headers, `${method} ${path}`);
        }
      }
    });

    test("/verify takes a key only when paid: a keyed call ignores it", async () => {
      const { key } = await newKey("keyed-verify");
      const keyed = await paidVerify({ "x-svc-key": key, "idempotency-key": "unused" });
      assert.equal(keyed.status, 200);
      assert.equal(keyed.headers.get("idempotency-key"), null);
    });
  });
}

idempotencySuite(
  "embedded",
  () => ({}),
  () => {},
);

const prefix = randomPrefix();
idempotencySuite(
  "Redis",
  () => ({ redisUrl: SHARED_REDIS_URL, redisPrefix: prefix }),
  async () => {
    const connection = await openTestRedis(prefix);
    const keys = await keysUnder(connection.client, prefix);
    // Entries and their owner's ledger are named by hashes: no key, key id or address in
    // Redis, and they expire in 24 h.
    const entries = keys.filter((key) => key.startsWith(`${prefix}idempotency:`));
    if (keptAnswers) assert.ok(entries.length > 0);
    for (const entry of entries) {
      assert.match(
        entry.slice(prefix.length),
        /^idempotency:\{[0-9a-f]{64}\}:(entry:[0-9a-f]{64}|ledger|sizes)$/,
      );
      const ttl = await connection.client.pttl(entry);
      assert.ok(ttl > 86_000_000 && ttl <= 86_400_000, `ttl ${ttl}`);
    }
    if (keys.length > 0) await connection.client.unlink(...keys);
    await connection.close();
  },
);
