/** The x402 wire codec: 402 challenges, payment headers, settlement receipts, v1 and v2. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  decodePaymentHeader,
  encodeChallenge,
  encodeSettlementResponse,
  MAX_PAYMENT_HEADER_CHARS,
  PAYMENT_HEADERS,
  paymentFromHeaders,
} from "../../src/payments/codec.js";
import { PaymentError, type PaymentErrorCode } from "../../src/payments/errors.js";
import { toPlain } from "../../src/verifier/json/value.js";
import {
  callRequirements,
  fromHeader,
  PAY_TO,
  signAuthorization,
  testSettings,
  toHeader,
  v1Payment,
  v2Payment,
  wallet,
} from "./support.js";

const BASE_USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";

function rejects(code: PaymentErrorCode, run: () => unknown): void {
  assert.throws(run, (error: unknown) => {
    assert.ok(error instanceof PaymentError, `expected a PaymentError, got ${String(error)}`);
    assert.equal(error.code, code);
    return true;
  });
}

describe("the 402 challenge", () => {
  test("carries a v1 body and a v2 PAYMENT-REQUIRED header for the same requirements", () => {
    const challenge = encodeChallenge(callRequirements());
    assert.equal(
      challenge.body,
      '{"x402Version":1,"error":"payment_required","accepts":[{"scheme":"exact","network":"base",' +
        '"maxAmountRequired":"10000","resource":"https://receiptd.example/verify",' +
        '"description":"Verify a Continuity Receipt bundle","mimeType":"application/json",' +
        `"payTo":"${PAY_TO}","maxTimeoutSeconds":60,"asset":"${BASE_USDC}",` +
        '"extra":{"name":"USD Coin","version":"2"}}]}',
    );
    assert.deepEqual(fromHeader(challenge.paymentRequired), {
      x402Version: 2,
      error: "payment_required",
      resource: {
        url: "https://receiptd.example/verify",
        description: "Verify a Continuity Receipt bundle",
        mimeType: "application/json",
      },
      accepts: [
        {
          scheme: "exact",
          network: "eip155:8453",
          amount: "10000",
          asset: BASE_USDC,
          payTo: PAY_TO,
          maxTimeoutSeconds: 60,
          extra: { name: "USD Coin", version: "2" },
        },
      ],
    });
  });

  test("names why a payment was refused", () => {
    const challenge = encodeChallenge(callRequirements(), "invalid_exact_evm_payload_signature");
    assert.equal(JSON.parse(challenge.body).error, "invalid_exact_evm_payload_signature");
    assert.equal(
      (fromHeader(challenge.paymentRequired) as { error: string }).error,
      "invalid_exact_evm_payload_signature",
    );
  });
});

describe("payment headers round trip", () => {
  test("v1 X-PAYMENT", async () => {
    const [option] = callRequirements().options;
    assert.ok(option);
    const signed = await signAuthorization(wallet(), option);
    const header = toHeader(v1Payment("base", signed));
    const payment = paymentFromHeaders({ [PAYMENT_HEADERS.xPayment]: header });
    assert.ok(payment !== null);
    assert.equal(payment.x402Version, 1);
    assert.equal(payment.network, "base");
    assert.deepEqual(payment.payload, signed);
    assert.equal(toHeader(payment.raw), header, "the raw payload is kept verbatim");
  });

  test("v2 PAYMENT-SIGNATURE", async () => {
    const [option] = callRequirements().options;
    assert.ok(option);
    const signed = await signAuthorization(wallet(), option);
    const header = toHeader(v2Payment(option.v2, signed));
    const payment = paymentFromHeaders({ [PAYMENT_HEADERS.signature]: header });
    assert.ok(payment !== null && payment.x402Version === 2);
    assert.equal(payment.network, "eip155:8453");
    assert.deepEqual(toPlain(payment.accepted), toPlain(option.v2));
    assert.deepEqual(payment.payload, signed);
  });

  test("no payment header is no payment", () => {
    assert.equal(paymentFromHeaders({ authorization: "Bearer svc_x" }), null);
  });
});

describe("malformed payment headers are typed errors, never crashes", () => {
  const good = {
    x402Version: 1,
    scheme: "exact",
    network: "base",
    payload: {
      signature: `0x${"11".repeat(65)}`,
      authorization: {
        from: PAY_TO,
        to: PAY_TO,
        value: "10000",
        validAfter: "0",
        validBefore: "99999999999",
        nonce: `0x${"ab".repeat(32)}`,
      },
    },
  };
  const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64");
  const withAuthorization = (patch: Record<string, unknown>) =>
    toHeader({
      ...good,
      payload: { ...good.payload, authorization: { ...good.payload.authorization, ...patch } },
    });

  test("the well-formed sample decodes (control)", () => {
    assert.equal(decodePaymentHeader(toHeader(good), 1).x402Version, 1);
  });

  const cases: [string, PaymentErrorCode, () => string][] = [
    ["oversized", "payment_header_too_large", () => "A".repeat(MAX_PAYMENT_HEADER_CHARS + 4)],
    ["empty", "invalid_payment_encoding", () => ""],
    ["not base64", "invalid_payment_encoding", () => "not base64!"],
    ["unpadded", "invalid_payment_encoding", () => "e30"],
    ["base64url alphabet", "invalid_payment_encoding", () => b64("{}>>>?").replace(/\+/g, "-")],
    ["non-canonical final bits", "invalid_payment_encoding", () => "e31="],
    ["not JSON", "invalid_payment_json", () => b64("hello")],
    ["duplicate member", "invalid_payment_json", () => b64('{"x402Version":1,"x402Version":1}')],
    ["trailing data", "invalid_payment_json", () => b64("{} {}")],
    ["an array", "invalid_payload", () => b64("[1]")],
    ["version 3", "invalid_x402_version", () => toHeader({ ...good, x402Version: 3 })],
    ["version as string", "invalid_x402_version", () => toHeader({ ...good, x402Version: "1" })],
    ["v2 in X-PAYMENT", "invalid_x402_version", () => toHeader({ ...good, x402Version: 2 })],
    ["another scheme", "invalid_scheme", () => toHeader({ ...good, scheme: "upto" })],
    ["no payload", "invalid_payload", () => toHeader({ ...good, payload: undefined })],
    ["numeric value", "invalid_payload", () => withAuthorization({ value: 10000 })],
    ["negative value", "invalid_payload", () => withAuthorization({ value: "-1" })],
    ["value over uint256", "invalid_payload", () => withAuthorization({ value: "9".repeat(78) })],
    ["short nonce", "invalid_payload", () => withAuthorization({ nonce: "0xabcd" })],
    ["bad address", "invalid_payload", () => withAuthorization({ to: "0x1234" })],
    [
      "non-hex signature",
      "invalid_payload",
      () => toHeader({ ...good, payload: { ...good.payload, signature: "0xzz" } }),
    ],
  ];
  for (const [name, code, header] of cases) {
    test(name, () => rejects(code, () => decodePaymentHeader(header(), 1)));
  }

  test("v1 payload in PAYMENT-SIGNATURE, v2 without accepted", () => {
    rejects("invalid_x402_version", () =>
      paymentFromHeaders({ [PAYMENT_HEADERS.signature]: toHeader(good) }),
    );
    rejects("invalid_payload", () => decodePaymentHeader(toHeader({ ...good, x402Version: 2 }), 2));
  });

  test("both headers, or a repeated header", () => {
    const header = toHeader(good);
    rejects("multiple_payment_headers", () =>
      paymentFromHeaders({
        [PAYMENT_HEADERS.xPayment]: header,
        [PAYMENT_HEADERS.signature]: header,
      }),
    );
    rejects("multiple_payment_headers", () =>
      paymentFromHeaders({ [PAYMENT_HEADERS.xPayment]: [header, header] }),
    );
  });

  test("codes map to x402 invalidReason strings", () => {
    const error = new PaymentError("invalid_payment_encoding", "x");
    assert.equal(error.reason, "invalid_payload");
    const value = new PaymentError("invalid_exact_evm_payload_authorization_value", "x");
    assert.equal(value.reasonFor(1), "invalid_exact_evm_payload_authorization_value");
    assert.equal(value.reasonFor(2), "invalid_exact_evm_payload_authorization_value_mismatch");
    assert.equal(
      new PaymentError("signature_high_s", "x").reason,
      "invalid_exact_evm_payload_signature",
    );
  });
});

describe("settlement receipt headers", () => {
  const tx = `0x${"cd".repeat(32)}`;
  const network = testSettings().network;

  test("v1 X-PAYMENT-RESPONSE names the v1 network", () => {
    const header = encodeSettlementResponse(1, network, {
      success: true,
      transaction: tx,
      payer: PAY_TO,
    });
    assert.equal(header.name, "x-payment-response");
    assert.deepEqual(fromHeader(header.value), {
      success: true,
      transaction: tx,
      network: "base",
      payer: PAY_TO,
    });
  });

  test("v2 PAYMENT-RESPONSE names the CAIP-2 network and the amount", () => {
    const header = encodeSettlementResponse(2, network, {
      success: true,
      transaction: tx,
      payer: PAY_TO,
      amount: 10_000n,
    });
    assert.equal(header.name, "payment-response");
    assert.deepEqual(fromHeader(header.value), {
      success: true,
      transaction: tx,
      network: "eip155:8453",
      payer: PAY_TO,
      amount: "10000",
    });
  });

  test("a failed settlement carries an empty transaction and the reason", () => {
    const header = encodeSettlementResponse(2, network, {
      success: false,
      transaction: "",
      errorReason: "insufficient_funds",
    });
    assert.deepEqual(fromHeader(header.value), {
      success: false,
      transaction: "",
      network: "eip155:8453",
      errorReason: "insufficient_funds",
    });
  });
});
