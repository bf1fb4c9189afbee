/**
 * The facilitator client over real HTTP: against the local facilitator peer (verify, settle,
 * replay), and against misbehaving servers (down, 5xx, garbage, slow) that must all come out
 * as "unknown", never as a decision.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { parsePaymentPayload } from "../../src/payments/codec.js";
import { type VerifiedPayment, verifyExactPayment } from "../../src/payments/eip3009.js";
import {
  FacilitatorClient,
  type FacilitatorRequest,
  facilitatorRequest,
} from "../../src/payments/facilitator-client.js";
import { type FacilitatorPeer, startFacilitatorPeer } from "../../src/payments/facilitator-peer.js";
import { nonceLedgerKey } from "../../src/payments/nonce-ledger.js";
import type { PaymentOption } from "../../src/payments/requirements.js";
import { jsonObject, toPlain } from "../../src/verifier/json/value.js";
import {
  callRequirements,
  clock,
  passRequirements,
  signAuthorization,
  v1Payment,
  v2Payment,
  wallet,
} from "./support.js";

function callOption(): PaymentOption {
  const [option] = callRequirements().options;
  assert.ok(option);
  return option;
}

/** A locally verified v1 or v2 payment, ready to send to a facilitator. */
async function paid(
  version: 1 | 2,
  option = callOption(),
  value?: bigint,
): Promise<VerifiedPayment<PaymentOption>> {
  const signed = await signAuthorization(wallet(), option);
  const body = version === 1 ? v1Payment("base", signed) : v2Payment(option.v2, signed);
  const verified = await verifyExactPayment(parsePaymentPayload(body), [option], { now: clock });
  if (value === undefined) return verified;
  // The same payment re-signed for another value: what a facilitator must refuse.
  const other = await signAuthorization(wallet(), option, { value });
  const otherBody = version === 1 ? v1Payment("base", other) : v2Payment(option.v2, other);
  return { ...verified, payment: parsePaymentPayload(otherBody) };
}

describe("facilitator client against the local facilitator peer", () => {
  let peer: FacilitatorPeer;
  let client: FacilitatorClient;
  before(async () => {
    peer = await startFacilitatorPeer({ clock });
    client = new FacilitatorClient({ url: peer.url });
  });
  after(async () => {
    await client.close();
    await peer.close();
  });

  test("v1: verify, then settle with a deterministic transaction hash", async () => {
    const payment = await paid(1);
    const request = facilitatorRequest(payment);
    assert.deepEqual(await client.verify(request), { status: "valid", payer: payment.payer });
    const key = nonceLedgerKey({
      network: "eip155:8453",
      asset: payment.requirement.asset,
      payer: payment.payer,
      nonce: payment.authorization.nonce,
    });
    const transaction = `0x${createHash("sha256").update(`eip155:8453|${key}`).digest("hex")}`;
    assert.deepEqual(await client.settle(request), {
      status: "settled",
      transaction,
      network: "base",
      payer: payment.payer,
    });
  });

  test("v2: verify and settle name the CAIP-2 network", async () => {
    const payment = await paid(2);
    const request = facilitatorRequest(payment);
    assert.equal((await client.verify(request)).status, "valid");
    const settled = await client.settle(request);
    assert.equal(settled.status, "settled");
    assert.ok(settled.status === "settled" && settled.network === "eip155:8453");
  });

  test("a settled authorization is declined when replayed, at verify and at settle", async () => {
    const request = facilitatorRequest(await paid(1));
    assert.equal((await client.settle(request)).status, "settled");
    for (const outcome of [await client.verify(request), await client.settle(request)]) {
      assert.equal(outcome.status, "declined");
      assert.ok(outcome.status === "declined");
      assert.equal(outcome.reason, "invalid_transaction_state");
    }
  });

  test("concurrent settlements of one authorization: exactly one settles", async () => {
    const request = facilitatorRequest(await paid(2));
    const outcomes = await Promise.all(Array.from({ length: 6 }, () => client.settle(request)));
    assert.equal(outcomes.filter((outcome) => outcome.status === "settled").length, 1);
    assert.equal(outcomes.filter((outcome) => outcome.status === "declined").length, 5);
  });

  test("the peer re-checks what it is sent: a wrong amount is declined, in each version's terms", async () => {
    for (const [version, reason] of [
      [1, "invalid_exact_evm_payload_authorization_value"],
      [2, "invalid_exact_evm_payload_authorization_value_mismatch"],
    ] as const) {
      const request = facilitatorRequest(await paid(version, callOption(), 9_999n));
      const verified = await client.verify(request);
      assert.equal(verified.status, "declined");
      assert.ok(verified.status === "declined" && verified.reason === reason);
      const settled = await client.settle(request);
      assert.ok(settled.status === "declined" && settled.reason === reason);
    }
  });

  test("a day pass payment settles for its own amount", async () => {
    const day = passRequirements().options[1];
    assert.ok(day && day.kind === "day");
    const request = facilitatorRequest(await paid(1, day));
    assert.equal((await client.settle(request)).status, "settled");
  });

  test("a request the peer cannot read is declined as invalid_payload", async () => {
    const request: FacilitatorRequest = {
      x402Version: 1,
      paymentPayload: jsonObject({ x402Version: 1 }),
      paymentRequirements: callOption().v1,
    };
    assert.deepEqual(await client.verify(request), {
      status: "declined",
      reason: "invalid_payload",
      payer: null,
    });
  });

  test("/supported lists exact on Base in both versions", async () => {
    const response = await fetch(`${peer.url}/supported`);
    assert.equal(response.status, 200);
    const body = (await response.json()) as { kinds: unknown[]; signers: object };
    assert.ok(
      body.kinds.some(
        (kind) => JSON.stringify(kind) === '{"x402Version":1,"scheme":"exact","network":"base"}',
      ),
    );
    assert.ok(
      body.kinds.some(
        (kind) =>
          JSON.stringify(kind) === '{"x402Version":2,"scheme":"exact","network":"eip155:8453"}',
      ),
    );
    assert.deepEqual(Object.keys(body.signers), ["eip155:*"]);
  });
});

type Behaviour = (request: IncomingMessage, body: string, response: ServerResponse) => void;

/** A stand-in facilitator that behaves as told; `seen` records what it was sent. */
async function fakeFacilitator(behaviour: Behaviour) {
  const seen: { path: string; body: string }[] = [];
  const server: Server = createServer((request, response) => {
    let body = "";
    request.setEncoding("utf8");
    request.on("data", (chunk: string) => {
      body += chunk;
    });
    request.on("end", () => {
      seen.push({ path: request.url ?? "", body });
      behaviour(request, body, response);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function answer(status: number, body: string): Behaviour {
  return (_request, _body, response) => {
    response.writeHead(status, { "content-type": "application/json" });
    response.end(body);
  };
}

describe("facilitator client classification", () => {
  let request: FacilitatorRequest;
  before(async () => {
    request = facilitatorRequest(await paid(2));
  });

  async function outcomes(behaviour: Behaviour, options: { timeoutMs?: number } = {}) {
    const fake = await fakeFacilitator(behaviour);
    const client = new FacilitatorClient({
      url: fake.url,
      verifyTimeoutMs: options.timeoutMs,
      settleTimeoutMs: options.timeoutMs,
    });
    try {
      return { verify: await client.verify(request), settle: await client.settle(request) };
    } finally {
      await client.close();
      await fake.close();
    }
  }

  test("sends {x402Version, paymentPayload, paymentRequirements} under the URL's path", async () => {
    const fake = await fakeFacilitator(answer(200, '{"isValid":true}'));
    const client = new FacilitatorClient({
      url: `${fake.url}/x402/facilitator`,
      headers: { authorization: "Bearer facilitator-credential" },
    });
    try {
      await client.verify(request);
      await client.settle(request);
    } finally {
      await client.close();
      await fake.close();
    }
    assert.deepEqual(
      fake.seen.map((entry) => entry.path),
      ["/x402/facilitator/verify", "/x402/facilitator/settle"],
    );
    const sent = JSON.parse(fake.seen[0]!.body) as Record<string, unknown>;
    assert.deepEqual(Object.keys(sent), ["x402Version", "paymentPayload", "paymentRequirements"]);
    assert.equal(sent.x402Version, 2);
    assert.deepEqual(sent.paymentRequirements, toPlain(callOption().v2));
    assert.equal((sent.paymentPayload as { x402Version: number }).x402Version, 2);
  });

  test("a declining facilitator, on 200 or on 400, is a decline", async () => {
    for (const status of [200, 400]) {
      const result = await outcomes((request, _body, response) => {
        const declined = request.url?.endsWith("/verify")
          ? '{"isValid":false,"invalidReason":"insufficient_funds"}'
          : '{"success":false,"errorReason":"insufficient_funds","transaction":"","network":"base"}';
        answer(status, declined)(request, _body, response);
      });
      assert.deepEqual(result.verify, {
        status: "declined",
        reason: "insufficient_funds",
        payer: null,
      });
      assert.deepEqual(result.settle, {
        status: "declined",
        reason: "insufficient_funds",
        payer: null,
      });
    }
  });

  test("an unreadable reason is replaced by the x402 'unexpected' reason", async () => {
    const result = await outcomes(
      answer(200, '{"isValid":false,"success":false,"invalidReason":"<script>"}'),
    );
    assert.ok(result.verify.status === "declined");
    assert.equal(result.verify.reason, "unexpected_verify_error");
    assert.ok(result.settle.status === "declined");
    assert.equal(result.settle.reason, "unexpected_settle_error");
  });

  test("facilitator down → unknown (unreachable)", async () => {
    const fake = await fakeFacilitator(answer(200, "{}"));
    await fake.close();
    const client = new FacilitatorClient({ url: fake.url });
    try {
      const verify = await client.verify(request);
      const settle = await client.settle(request);
      assert.equal(verify.status, "unknown");
      assert.ok(verify.status === "unknown" && verify.code === "facilitator_unreachable");
      assert.ok(settle.status === "unknown" && settle.code === "facilitator_unreachable");
      assert.match(settle.detail, /^\/settle failed: ECONNREFUSED$/);
    } finally {
      await client.close();
    }
  });

  test("5xx → unknown, even when the body claims success", async () => {
    const result = await outcomes(
      answer(503, `{"isValid":true,"success":true,"transaction":"0x${"ab".repeat(32)}"}`),
    );
    assert.deepEqual(result.verify, {
      status: "unknown",
      code: "facilitator_error",
      detail: "/verify answered HTTP 503",
    });
    assert.deepEqual(result.settle, {
      status: "unknown",
      code: "facilitator_error",
      detail: "/settle answered HTTP 503",
    });
  });

  test("garbage → unknown (bad response)", async () => {
    for (const body of [
      "<html>oops</html>",
      "[]",
      '{"isValid":"yes","success":1}',
      '{"a":1,"a":2}',
    ]) {
      const result = await outcomes(answer(200, body));
      assert.ok(
        result.verify.status === "unknown" && result.verify.code === "facilitator_bad_response",
        body,
      );
      assert.ok(
        result.settle.status === "unknown" && result.settle.code === "facilitator_bad_response",
        body,
      );
    }
  });

  test("success without a transaction hash is not a settlement", async () => {
    for (const body of ['{"success":true}', '{"success":true,"transaction":"0x1234"}']) {
      const result = await outcomes(answer(200, body));
      assert.deepEqual(result.settle, {
        status: "unknown",
        code: "facilitator_bad_response",
        detail: "/settle succeeded without a transaction hash",
      });
    }
  });

  test("another status without a decision (401, 302) → unknown", async () => {
    for (const status of [401, 302]) {
      const result = await outcomes(answer(status, '{"error":"unauthorized"}'));
      assert.ok(result.verify.status === "unknown" && result.verify.code === "facilitator_error");
      assert.ok(result.settle.status === "unknown" && result.settle.code === "facilitator_error");
    }
  });

  test("an oversized answer → unknown", async () => {
    const result = await outcomes(answer(200, `{"isValid":true,"pad":"${"x".repeat(70_000)}"}`));
    assert.ok(
      result.verify.status === "unknown" && result.verify.code === "facilitator_bad_response",
    );
  });

  test("no answer in time → unknown (timeout)", async () => {
    const result = await outcomes(() => {}, { timeoutMs: 200 });
    assert.deepEqual(result.verify, {
      status: "unknown",
      code: "facilitator_timeout",
      detail: "/verify did not answer in time",
    });
    assert.ok(result.settle.status === "unknown" && result.settle.code === "facilitator_timeout");
  });
});
