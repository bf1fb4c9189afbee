/**
 * x402 end to end (service.md §9, protocols.md §1): a client reads the 402, signs a real
 * EIP-3009 authorization with a generated wallet, and pays through the local facilitator peer
 * (which recovers the signer and settles once per nonce). Then: the receipt header, the signed
 * settlement receipt at /receipts/{tx}, replays, local refusals, a facilitator that is down,
 * and the lease and day pass of the pass routes.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { type AddressInfo, createServer } from "node:net";
import { after, before, describe, test } from "node:test";
import type { PrivateKeyAccount } from "viem/accounts";
import { sealCrystal, tenantHashOf } from "../../../src/crystals/client.js";
import type { Authorization } from "../../../src/payments/codec.js";
import { startFacilitatorPeer } from "../../../src/payments/facilitator-peer.js";
import type { Hex } from "../../../src/payments/formats.js";
import { type PaymentSettings, requirementFromWire } from "../../../src/payments/requirements.js";
import { verifyEd25519 } from "../../../src/verifier/crypto/ed25519.js";
import { canonicalBytes } from "../../../src/verifier/json/canonical.js";
import { parseJson } from "../../../src/verifier/json/parse.js";
import { fromPlain, isObject, type JsonObject } from "../../../src/verifier/json/value.js";
import {
  fromHeader,
  highS,
  NOW_MS,
  NOW_S,
  signAuthorization,
  testSettings,
  toHeader,
  v1Payment,
  v2Payment,
  wallet,
} from "../../payments/support.js";
import { corpusBytes } from "../../support/corpus.js";
import { requestFrom } from "../support/from-address.js";
import { startTestService, type TestService } from "../support/service.js";

const GOOD = corpusBytes("vectors/01_happy_minimal.json");

interface Answer {
  status: number;
  headers: Record<string, string | string[] | number | undefined>;
  body: string;
}

type Version = 1 | 2;

interface Offer {
  version: Version;
  /** The offer as the challenge states it (v1 `accepts[i]` or v2 `accepts[i]`). */
  wire: JsonObject;
}

/** Reads the i-th offer of a 402 the way a client does: v1 from the body, v2 from the header. */
function offerOf(challenge: Answer, version: Version, index = 0): Offer {
  assert.equal(challenge.status, 402, challenge.body);
  const source =
    version === 1
      ? JSON.parse(challenge.body)
      : fromHeader(String(challenge.headers["payment-required"]));
  const accepts = (source as { accepts: unknown[] }).accepts;
  const wire = fromPlain(accepts[index]);
  assert.ok(isObject(wire));
  return { version, wire };
}

/** The payment header for `offer`, signed by `payer` (with `overrides` in what is signed). */
async function paymentHeader(
  offer: Offer,
  payer: PrivateKeyAccount,
  overrides: Partial<Authorization> = {},
  signature?: (signed: Hex) => Hex,
): Promise<Record<string, string>> {
  const requirement = requirementFromWire(offer.wire, offer.version);
  const signed = await signAuthorization(payer, requirement, overrides);
  if (signature) signed.signature = signature(signed.signature);
  if (offer.version === 1) {
    const network = String(offer.wire.get("network"));
    return { "x-payment": toHeader(v1Payment(network, signed)) };
  }
  return { "payment-signature": toHeader(v2Payment(offer.wire, signed)) };
}

async function closedPortUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  assert.ok(address && typeof address === "object");
  return `http://127.0.0.1:${address.port}/`;
}

function paymentsConfig(settings: PaymentSettings, facilitatorUrl: string) {
  return { payments: { settings, facilitatorUrl, publicBaseUrl: "https://receiptd.example" } };
}

describe("x402 through the local facilitator", () => {
  const clock = { now: NOW_MS };
  let peer: { url: string; close(): Promise<void> };
  let service: TestService;
  const payer = wallet();

  const call = async (
    method: "GET" | "POST",
    url: string,
    headers: Record<string, string> = {},
    payload?: Buffer | string,
  ): Promise<Answer> => {
    const response = await service.app.inject({ method, url, headers, payload });
    return { status: response.statusCode, headers: response.headers, body: response.body };
  };
  const verify = (headers: Record<string, string> = {}, payload: Buffer | string = GOOD) =>
    call("POST", "/verify", headers, payload);

  /** The settlement receipt, stored through the settlements queue after the response. */
  const storedReceipt = async (tx: string): Promise<JsonObject> => {
    let stored: Answer | undefined;
    for (let attempt = 0; attempt < 200; attempt += 1) {
      stored = await call("GET", `/receipts/${tx}`);
      if (stored.status === 200) break;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    assert.equal(stored?.status, 200, stored?.body);
    const document = parseJson(stored?.body ?? "");
    assert.ok(isObject(document));
    const receipt = document.get("receipt");
    assert.ok(isObject(receipt));
    return receipt;
  };

  before(async () => {
    peer = await startFacilitatorPeer({ clock: () => NOW_MS });
    service = await startTestService(paymentsConfig(testSettings(), peer.url), {
      clock: () => clock.now,
      anonymous: true,
    });
  });
  after(async () => {
    await service.close();
    await peer.close();
  });

  test("no credential: 402 with the v1 body and the v2 PAYMENT-REQUIRED header", async () => {
    const challenge = await verify();
    assert.equal(challenge.status, 402);
    const v1 = JSON.parse(challenge.body);
    assert.equal(v1.x402Version, 1);
    assert.equal(v1.error, "payment_required");
    assert.equal(v1.accepts.length, 1);
    assert.equal(v1.accepts[0].scheme, "exact");
    assert.equal(v1.accepts[0].maxAmountRequired, "10000");
    assert.equal(v1.accepts[0].resource, "https://receiptd.example/verify");
    const v2 = fromHeader(String(challenge.headers["payment-required"])) as {
      x402Version: number;
      accepts: { network: string; amount: string }[];
    };
    assert.equal(v2.x402Version, 2);
    assert.equal(v2.accepts[0]?.network, "eip155:8453");
    assert.equal(v2.accepts[0]?.amount, "10000");
  });

  for (const version of [1, 2] as const) {
    test(`v${version}: pay → 200 with the receipt header → a signed settlement receipt`, async () => {
      const offer = offerOf(await verify(), version);
      const headers = await paymentHeader(offer, payer);
      const paid = await verify(headers);
      assert.equal(paid.status, 200, paid.body);
      assert.equal(JSON.parse(paid.body).verdict, "TRUSTED");
      assert.equal(paid.headers["x-ratelimit-limit"], "1000");

      const headerName = version === 1 ? "x-payment-response" : "payment-response";
      const settlement = fromHeader(String(paid.headers[headerName])) as {
        success: boolean;
        transaction: string;
        network: string;
        payer: string;
      };
      assert.equal(settlement.success, true);
      assert.match(settlement.transaction, /^0x[0-9a-f]{64}$/);
      assert.equal(settlement.network, version === 1 ? "base" : "eip155:8453");
      assert.equal(settlement.payer, payer.address);

      const receipt = await storedReceipt(settlement.transaction);
      assert.equal(receipt.get("kind"), "svc.payment-receipt");
      assert.equal(receipt.get("tx"), settlement.transaction);
      assert.equal(receipt.get("path"), "/verify");
      assert.equal(receipt.get("amount"), "10000");
      assert.equal(receipt.get("network"), "eip155:8453");
      const issuer = String(receipt.get("issuer"));
      assert.equal(issuer, service.app.serviceIdentity.signer().did);
      const sig = receipt.get("sig");
      assert.ok(isObject(sig));
      assert.equal(
        verifyEd25519(issuer, canonicalBytes(receipt, "sig"), String(sig.get("value"))),
        true,
      );

      const replay = await verify(headers);
      assert.equal(replay.status, 402);
      assert.equal(JSON.parse(replay.body).error, "nonce_already_used");
    });
  }

  test("a paid MCP tools/call: its receipt records the JSON-RPC method and the tool", async () => {
    const mcp = (headers: Record<string, string>, body: string) =>
      call("POST", "/mcp", { "content-type": "application/json", ...headers }, body);
    const rpc = (id: number, method: string, params: object) =>
      JSON.stringify({ jsonrpc: "2.0", id, method, params });
    const toolCall = (id: number, name: string) =>
      rpc(id, "tools/call", { name, arguments: { issuer: "did:key:z6MkNothingStoredHere" } });
    const verifyCall = (id: number) =>
      rpc(id, "tools/call", {
        name: "verify_bundle",
        arguments: { bundle: JSON.parse(GOOD.toString("utf8")) },
      });
    const paidCall = async (body: string, headers: Record<string, string> = {}) => {
      const offer = offerOf(await mcp({}, body), 2);
      const paid = await mcp({ ...headers, ...(await paymentHeader(offer, payer)) }, body);
      assert.equal(paid.status, 200, paid.body);
      const { transaction } = fromHeader(String(paid.headers["payment-response"])) as {
        transaction: string;
      };
      return storedReceipt(transaction);
    };

    const receipt = await paidCall(verifyCall(1), { "user-agent": "node" });
    assert.equal(receipt.get("path"), "/mcp");
    assert.equal(receipt.get("rpc"), "tools/call");
    assert.equal(receipt.get("tool"), "verify_bundle");
    assert.equal(receipt.get("ua_family"), "node");
    const issuer = String(receipt.get("issuer"));
    const sig = receipt.get("sig");
    assert.ok(isObject(sig));
    assert.equal(
      verifyEd25519(issuer, canonicalBytes(receipt, "sig"), String(sig.get("value"))),
      true,
    );

    // A receipt names one tool, and never a name the client made up: the method alone then.
    const v1 = { "mcp-protocol-version": "2025-03-26" };
    const batch = `[${toolCall(1, "get_revocations")},${verifyCall(2)}]`;
    const mixed = await paidCall(batch, v1);
    assert.equal(mixed.get("rpc"), "tools/call");
    assert.equal(mixed.has("tool"), false);
    const unknown = await paidCall(`[${toolCall(1, "no such tool")},${verifyCall(2)}]`, v1);
    assert.equal(unknown.get("rpc"), "tools/call");
    assert.equal(unknown.has("tool"), false);

    // Tool errors only (no document, an unknown tool): no work done, so nothing is settled,
    // as `GET /revocations/{issuer}`'s 404 is not (issue 37).
    const failing = `[${toolCall(1, "get_revocations")},${toolCall(2, "no such tool")}]`;
    const offer = offerOf(await mcp(v1, failing), 2);
    const unpaid = await mcp({ ...v1, ...(await paymentHeader(offer, payer)) }, failing);
    assert.equal(unpaid.status, 200, unpaid.body);
    assert.equal(unpaid.headers["payment-response"], undefined, unpaid.body);
  });

  test("a refused request is not settled: the same authorization still pays later", async () => {
    const headers = await paymentHeader(offerOf(await verify(), 2), payer);
    const refused = await verify(headers, '{"a":1,"a":2}');
    assert.equal(refused.status, 400);
    assert.equal(refused.headers["payment-response"], undefined);
    const paid = await verify(headers);
    assert.equal(paid.status, 200, paid.body);
    assert.ok(paid.headers["payment-response"]);
  });

  test("refusals after the payer is known cost the payer's cap nothing", async () => {
    const own = wallet();
    const offer = offerOf(await verify(), 2);
    const headers = await paymentHeader(offer, own);
    const first = await verify(headers);
    assert.equal(first.status, 200, first.body);
    assert.equal(first.headers["x-ratelimit-remaining"], "999");
    // A replay (402), a bad body (400, not settled) and a settled result (200), in turn.
    const replay = await verify(headers);
    assert.equal(replay.status, 402);
    assert.equal(replay.headers["x-ratelimit-remaining"], "999");
    const next = await paymentHeader(offer, own);
    const invalid = await verify(next, '{"a":1,"a":2}');
    assert.equal(invalid.status, 400);
    assert.equal(invalid.headers["x-ratelimit-remaining"], "999");
    const paid = await verify(next);
    assert.equal(paid.status, 200, paid.body);
    assert.equal(paid.headers["x-ratelimit-remaining"], "998");
  });

  test("an API key needs no payment", async () => {
    const { key } = await service.app.accessServices.keys.create({ name: "keyed-client" });
    const answer = await verify({ "x-svc-key": key });
    assert.equal(answer.status, 200);
    assert.equal(answer.headers["payment-response"], undefined);
  });

  describe("lease and day pass", () => {
    const validation = () => {
      const bundle = parseJson(GOOD);
      assert.ok(isObject(bundle));
      const taskId = String(bundle.get("task_id"));
      const taskHash = `sha256:${sha256Hex(taskId)}`;
      return `{"request_id":"0x${"11".repeat(32)}","task_hash":"${taskHash}","bundle":${GOOD.toString("utf8")}}`;
    };
    const tenant = tenantHashOf("x402 test tenant");
    const crystal = () =>
      JSON.stringify(
        sealCrystal({
          plaintext: Buffer.from("state"),
          key: Buffer.alloc(32, 7),
          tenantHash: tenant,
          createdAt: "2026-01-01T00:00:00Z",
        }),
      );

    test("a lease opens /erc8004/validate for 5 minutes, then 402", async () => {
      clock.now = NOW_MS;
      const challenge = await call("POST", "/erc8004/validate", {}, validation());
      const offers = JSON.parse(challenge.body).accepts as { maxAmountRequired: string }[];
      assert.deepEqual(
        offers.map((offer) => offer.maxAmountRequired),
        ["10000", "500000"],
      );
      const paid = await call(
        "POST",
        "/erc8004/validate",
        await paymentHeader(offerOf(challenge, 2, 0), payer),
        validation(),
      );
      assert.equal(paid.status, 200, paid.body);
      assert.ok(paid.headers["payment-response"]);
      const pass = String(paid.headers["x-pass-token"]);
      assert.match(pass, /^pass_/);

      clock.now = NOW_MS + 299_000;
      const again = await call("POST", "/erc8004/validate", { "x-pass-token": pass }, validation());
      assert.equal(again.status, 200, again.body);
      assert.equal(again.headers["payment-response"], undefined);
      const bearer = await call(
        "POST",
        "/erc8004/validate",
        { authorization: `Bearer ${pass}` },
        validation(),
      );
      assert.equal(bearer.status, 200, bearer.body);

      const elsewhere = await call("POST", "/crystals", { "x-pass-token": pass }, crystal());
      assert.equal(elsewhere.status, 402);
      assert.equal(JSON.parse(elsewhere.body).error, "pass_scope_mismatch");

      clock.now = NOW_MS + 300_000;
      const expired = await call(
        "POST",
        "/erc8004/validate",
        { "x-pass-token": pass },
        validation(),
      );
      assert.equal(expired.status, 402);
      assert.equal(JSON.parse(expired.body).error, "pass_expired");
    });

    test("an unbound task_hash is settled like a result: one authorization buys one validation", async () => {
      clock.now = NOW_MS;
      const unbound = validation().replace(
        /"task_hash":"sha256:[0-9a-f]{64}"/,
        `"task_hash":"sha256:${"00".repeat(32)}"`,
      );
      const challenge = await call("POST", "/erc8004/validate", {}, unbound);
      const headers = await paymentHeader(offerOf(challenge, 2, 0), wallet());
      const uses = [];
      for (let attempt = 0; attempt < 4; attempt += 1) {
        uses.push(await call("POST", "/erc8004/validate", headers, unbound));
      }
      const [first, ...replays] = uses;
      assert.equal(first?.status, 422, first?.body);
      const evaluation = JSON.parse(first?.body ?? "{}") as { error: string; verdict: string };
      assert.deepEqual([evaluation.error, evaluation.verdict], ["task_hash_unbound", "TRUSTED"]);
      assert.ok(first?.headers["payment-response"]);
      for (const replay of replays) {
        assert.equal(replay.status, 402);
        assert.equal(JSON.parse(replay.body).error, "nonce_already_used");
      }
    });

    test("a day pass opens /crystals for 24 hours, then 402", async () => {
      clock.now = NOW_MS;
      const challenge = await call("POST", "/crystals", {}, crystal());
      const paid = await call(
        "POST",
        "/crystals",
        await paymentHeader(offerOf(challenge, 1, 1), payer),
        crystal(),
      );
      assert.equal(paid.status, 201, paid.body);
      const pass = String(paid.headers["x-pass-token"]);

      clock.now = NOW_MS + 86_399_000;
      const later = await call("POST", "/crystals", { "x-pass-token": pass }, crystal());
      assert.equal(later.status, 201, later.body);

      clock.now = NOW_MS + 86_400_000;
      const expired = await call("POST", "/crystals", { "x-pass-token": pass }, crystal());
      assert.equal(expired.status, 402);
      assert.equal(JSON.parse(expired.body).error, "pass_expired");
      clock.now = NOW_MS;
    });
  });
});

describe("x402 refusals that never reach the facilitator", () => {
  let service: TestService;
  const payer = wallet();
  before(async () => {
    // Nothing listens at the facilitator URL: a call to it would answer 502, not 402.
    service = await startTestService(paymentsConfig(testSettings(), await closedPortUrl()), {
      clock: () => NOW_MS,
      anonymous: true,
    });
  });
  after(() => service.close());

  const verify = async (headers: Record<string, string> = {}): Promise<Answer> => {
    const response = await service.app.inject({
      method: "POST",
      url: "/verify",
      headers,
      payload: GOOD,
    });
    return { status: response.statusCode, headers: response.headers, body: response.body };
  };

  const cases: [string, Partial<Authorization>, ((signature: Hex) => Hex) | undefined, string][] = [
    [
      "a wrong amount",
      { value: 9_999n },
      undefined,
      "invalid_exact_evm_payload_authorization_value",
    ],
    [
      "a wrong payee",
      { to: "0x000000000000000000000000000000000000dEaD" },
      undefined,
      "invalid_exact_evm_payload_recipient_mismatch",
    ],
    [
      "an expired authorization",
      { validBefore: NOW_S - 1n },
      undefined,
      "invalid_exact_evm_payload_authorization_valid_before",
    ],
    ["a high-s signature", {}, highS, "signature_high_s"],
  ];
  for (const [name, overrides, signature, code] of cases) {
    test(`${name} → 402 ${code}`, async () => {
      const offer = offerOf(await verify(), 1);
      const answer = await verify(await paymentHeader(offer, payer, overrides, signature));
      assert.equal(answer.status, 402);
      assert.equal(JSON.parse(answer.body).error, code);
      assert.ok(answer.headers["payment-required"]);
    });
  }

  test("a valid payment with the facilitator down → 502 and no verdict delivered", async () => {
    const offer = offerOf(await verify(), 2);
    const answer = await verify(await paymentHeader(offer, payer));
    assert.equal(answer.status, 502);
    assert.deepEqual(JSON.parse(answer.body), { error: "facilitator_unreachable" });
    assert.ok(!answer.body.includes("verdict"));
  });
});

describe("x402 signature checks cost little, and each address has its share", () => {
  const payer = wallet();
  const forger = wallet();
  let peer: { url: string; close(): Promise<void> };
  let service: TestService;
  let port: number;
  before(async () => {
    peer = await startFacilitatorPeer({ clock: () => NOW_MS });
    service = await startTestService(
      {
        ...paymentsConfig(testSettings(), peer.url),
        limits: { x402SignatureChecksPerAddress: 2, x402SignatureChecksPerSecond: 1000 },
      },
      // A frozen clock: the shares do not refill while the test runs, so counts are exact.
      { clock: () => NOW_MS, anonymous: true },
    );
    await service.app.listen({ port: 0, host: "127.0.0.1" });
    port = (service.app.server.address() as AddressInfo).port;
  });
  after(async () => {
    await service.close();
    await peer.close();
  });

  const recovered = async () =>
    (await service.app.metrics.signatureChecks.get()).values[0]?.value ?? 0;
  const verifyFrom = (address: string, headers: Record<string, string> = {}) =>
    requestFrom(port, address, {
      method: "POST",
      path: "/verify",
      headers: { "content-type": "application/json", ...headers },
      body: GOOD,
    });
  const challengeOf = async (version: Version) => offerOf(await verifyFrom("127.0.4.1"), version);

  test("a payment that breaks a cheap rule is refused without any signature work", async () => {
    const v1 = await challengeOf(1);
    const v2 = await challengeOf(2);
    const signed = await signAuthorization(payer, requirementFromWire(v2.wire, 2));
    const otherNetwork = new Map(v2.wire).set("network", "eip155:1");
    const otherAsset = new Map(v2.wire).set("asset", "0x0000000000000000000000000000000000000001");
    const cases: [string, Record<string, string>, string][] = [
      [
        "amount",
        await paymentHeader(v1, payer, { value: 1n }),
        "invalid_exact_evm_payload_authorization_value",
      ],
      [
        "payTo",
        await paymentHeader(v2, payer, { to: "0x000000000000000000000000000000000000dEaD" }),
        "invalid_exact_evm_payload_recipient_mismatch",
      ],
      [
        "network (v1)",
        { "x-payment": toHeader(v1Payment("base-sepolia", signed)) },
        "invalid_network",
      ],
      [
        "network (v2)",
        { "payment-signature": toHeader(v2Payment(otherNetwork, signed)) },
        "invalid_network",
      ],
      [
        "asset (v2)",
        { "payment-signature": toHeader(v2Payment(otherAsset, signed)) },
        "invalid_payment_requirements",
      ],
      [
        "not yet valid",
        await paymentHeader(v2, payer, { validAfter: NOW_S + 60n }),
        "invalid_exact_evm_payload_authorization_valid_after",
      ],
      [
        "expired",
        await paymentHeader(v1, payer, { validBefore: NOW_S }),
        "invalid_exact_evm_payload_authorization_valid_before",
      ],
      ["high s", await paymentHeader(v1, payer, {}, highS), "signature_high_s"],
    ];
    const before = await recovered();
    // From one address, many more times than its share: none of these takes from it.
    for (let round = 0; round < 3; round += 1) {
      for (const [name, headers, code] of cases) {
        const answer = await verifyFrom("127.0.4.2", headers);
        assert.equal(answer.status, 402, name);
        assert.equal(JSON.parse(answer.body).error, code, name);
      }
    }
    assert.equal(await recovered(), before, "no signature was recovered");
    const paid = await verifyFrom("127.0.4.2", await paymentHeader(v2, payer));
    assert.equal(paid.status, 200, paid.body);
    assert.equal(await recovered(), before + 1);
  });

  test("bogus signatures from one address do not starve another", async () => {
    const offer = await challengeOf(2);
    const before = await recovered();
    const refusals: string[] = [];
    for (let i = 0; i < 40; i += 1) {
      // Signed by the forger, claiming to be from the payer: well formed, wrong signer.
      const bogus = await paymentHeader(offer, forger, { from: payer.address });
      const answer = await verifyFrom("127.0.5.1", bogus);
      refusals.push(`${answer.status} ${JSON.parse(answer.body).error}`);
      if (answer.status === 429) assert.equal(answer.headers["retry-after"], "1");
    }
    // Its share (2 a second, a burst of 4) was recovered; the other 36 were refused before
    // any hashing.
    assert.deepEqual(refusals.slice(0, 4), Array(4).fill("402 signer_mismatch"));
    assert.deepEqual(new Set(refusals.slice(4)), new Set(["429 payment_rate_limited"]));
    assert.equal(await recovered(), before + 4);
    // Another address (even of the same /24) pays at once.
    const honest = await verifyFrom("127.0.5.2", await paymentHeader(offer, payer));
    assert.equal(honest.status, 200, honest.body);
    assert.equal(JSON.parse(honest.body).verdict, "TRUSTED");
    const metrics = await service.app.metrics.payments.get();
    const limited = metrics.values.find((value) => value.labels.outcome === "limited");
    assert.equal(limited?.value, 36);
  });
});

describe("x402 signature checks: the process's share", () => {
  test("past it every client is refused with 503 overloaded, before any hashing", async () => {
    const service = await startTestService(
      {
        ...paymentsConfig(testSettings(), await closedPortUrl()),
        limits: { x402SignatureChecksPerAddress: 100, x402SignatureChecksPerSecond: 2 },
      },
      { clock: () => NOW_MS, anonymous: true },
    );
    try {
      const payer = wallet();
      const challenge = await service.app.inject({ method: "POST", url: "/verify", payload: GOOD });
      const offer = offerOf(
        { status: challenge.statusCode, headers: challenge.headers, body: challenge.body },
        1,
      );
      const statuses: string[] = [];
      for (const remoteAddress of ["192.0.2.1", "198.51.100.1", "203.0.113.1", "192.0.2.9"]) {
        const answer = await service.app.inject({
          method: "POST",
          url: "/verify",
          headers: await paymentHeader(offer, payer, { value: 10_000n, from: wallet().address }),
          payload: GOOD,
          remoteAddress,
        });
        statuses.push(`${answer.statusCode} ${answer.json().error}`);
      }
      // A process-wide share of 2 allows a burst of 2 checks (one second's worth).
      assert.deepEqual(statuses, [
        "402 signer_mismatch",
        "402 signer_mismatch",
        "503 overloaded",
        "503 overloaded",
      ]);
    } finally {
      await service.close();
    }
  });
});

function sha256Hex(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}

describe("GET /info with payments on", () => {
  test("publishes the x402 terms", async () => {
    const service = await startTestService(paymentsConfig(testSettings(), "http://127.0.0.1:9/"), {
      anonymous: true,
    });
    try {
      const info = (await service.app.inject({ method: "GET", url: "/info" })).json();
      assert.deepEqual(info.payments.x402_versions, [1, 2]);
      assert.equal(info.payments.network, "eip155:8453");
      assert.equal(info.payments.pay_to, "0x209693Bc6afc0C5328bA36FaF03C514EF312287C");
      assert.deepEqual(info.payments.prices.per_call, { usd: "0.01", atomic: "10000" });
      assert.deepEqual(info.payments.prices.lease, { usd: "0.01", atomic: "10000", seconds: 300 });
      assert.deepEqual(info.payments.prices.day_pass, {
        usd: "0.50",
        atomic: "500000",
        seconds: 86_400,
      });
    } finally {
      await service.close();
    }
  });
});
