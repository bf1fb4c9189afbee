/** Local verification of `exact` EVM payments (EIP-3009 + EIP-712), every rejection rule. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { type PaymentPayload, parsePaymentPayload } from "../../src/payments/codec.js";
import { authorizationDigest, verifyExactPayment as verify } from "../../src/payments/eip3009.js";
import { PaymentError, type PaymentErrorCode } from "../../src/payments/errors.js";
import type { Hex } from "../../src/payments/formats.js";
import {
  type ExactRequirement,
  type PaymentOption,
  paymentRequirements,
  paymentSettings,
} from "../../src/payments/requirements.js";
import { fromPlain, type JsonObject, jsonObject } from "../../src/verifier/json/value.js";
import {
  callRequirements,
  clock,
  highS,
  NOW_S,
  passRequirements,
  type SignedAuthorization,
  signAuthorization,
  v1Payment,
  v2Payment,
  wallet,
  withV,
} from "./support.js";

const payment = (value: JsonObject) => parsePaymentPayload(value);

async function rejects(
  code: PaymentErrorCode,
  run: () => Promise<unknown>,
  reason?: string,
): Promise<void> {
  await assert.rejects(run, (error: unknown) => {
    assert.ok(error instanceof PaymentError, `expected a PaymentError, got ${String(error)}`);
    assert.equal(error.code, code);
    if (reason !== undefined) assert.equal(error.reason, reason);
    return true;
  });
}

function callOption(): PaymentOption {
  const [option] = callRequirements().options;
  assert.ok(option);
  return option;
}

function v1(signed: SignedAuthorization): PaymentPayload {
  return payment(v1Payment("base", signed));
}

describe("the x402 specification's test vector (Base Sepolia)", () => {
  // A real signature from the x402 specs (protocols.md §1.4, verified there).
  const signature: Hex =
    "0x2d6a7588d6acca505cbf0d9a4a227e0c52c6c34008c8e8986a1283259764173608a2ce6496642e377d6da8dbbf5836e9bd15092f9ecab05ded3d6293af148b571c";
  const signed: SignedAuthorization = {
    signature,
    authorization: {
      from: "0x857b06519E91e3A54538791bDbb0E22373e36b66",
      to: "0x209693Bc6afc0C5328bA36FaF03C514EF312287C",
      value: 10_000n,
      validAfter: 1_740_672_089n,
      validBefore: 1_740_672_154n,
      nonce: "0xf3746613c2d920b5fdabc0856f2aeb2d4f88ee6037b8cc5d04a71a4462f13480",
    },
  };
  const at = () => 1_740_672_100_000;

  function sepolia(name?: string): PaymentOption[] {
    const settings = paymentSettings({
      payTo: "0x209693Bc6afc0C5328bA36FaF03C514EF312287C",
      network: "eip155:84532",
      ...(name === undefined ? {} : { assetDomain: { name, version: "2" } }),
    });
    return [
      ...paymentRequirements(settings, {
        resource: { url: "https://x.example/", description: "d" },
        offers: ["call"],
      }).options,
    ];
  }

  test("hashes to the published digest and recovers the payer", async () => {
    const options = sepolia();
    assert.equal(
      await authorizationDigest(options[0]!, signed.authorization),
      "0xf256992871671abcb27ff92885a7afa46218724e5fc0bac35d050115aa1d22e6",
    );
    const verified = await verify(payment(v1Payment("base-sepolia", signed)), options, { now: at });
    assert.equal(verified.payer, "0x857b06519E91e3A54538791bDbb0E22373e36b66");
  });

  test("under the wrong token name it recovers someone else", async () => {
    await rejects("signer_mismatch", () =>
      verify(payment(v1Payment("base-sepolia", signed)), sepolia("USD Coin"), { now: at }),
    );
  });
});

describe("accepted payments", () => {
  test("v1: the payer is the signer, checksummed", async () => {
    const option = callOption();
    const account = wallet();
    const signed = await signAuthorization(account, option);
    const verified = await verify(v1(signed), [option], { now: clock });
    assert.equal(verified.payer, account.address);
    assert.equal(verified.requirement.kind, "call");
    assert.deepEqual(verified.authorization, signed.authorization);
  });

  test("v2: `accepted` deep-equals the requirement, whatever its member order", async () => {
    const option = callOption();
    const account = wallet();
    const signed = await signAuthorization(account, option);
    const reordered = new Map([...option.v2].reverse());
    const verified = await verify(payment(v2Payment(reordered, signed)), [option], { now: clock });
    assert.equal(verified.payer, account.address);
  });

  test("a lease and a day pass are told apart: by amount in v1, by `accepted` in v2", async () => {
    const options = passRequirements().options;
    const [lease, day] = options;
    assert.ok(lease && day);
    const account = wallet();
    const leaseSigned = await signAuthorization(account, lease);
    const daySigned = await signAuthorization(account, day);
    assert.equal(
      (await verify(v1(leaseSigned), options, { now: clock })).requirement.kind,
      "lease",
    );
    assert.equal((await verify(v1(daySigned), options, { now: clock })).requirement.kind, "day");
    const v2Day = payment(v2Payment(day.v2, daySigned));
    assert.equal((await verify(v2Day, options, { now: clock })).requirement.kind, "day");
  });

  test("v 0/1 is read as 27/28", async () => {
    const option = callOption();
    const signed = await signAuthorization(wallet(), option);
    const v = Number.parseInt(signed.signature.slice(130), 16);
    const zeroBased = { ...signed, signature: withV(signed.signature, v - 27) };
    const verified = await verify(v1(zeroBased), [option], { now: clock });
    assert.equal(verified.payer, signed.authorization.from);
  });

  test("the window edges: validAfter = now - 1, validBefore = now + 6", async () => {
    const option = callOption();
    const signed = await signAuthorization(wallet(), option, {
      validAfter: NOW_S - 1n,
      validBefore: NOW_S + 6n,
    });
    await verify(v1(signed), [option], { now: clock });
  });
});

describe("rejections", () => {
  test("wrong payee", async () => {
    const option = callOption();
    const signed = await signAuthorization(wallet(), option, { to: wallet().address });
    await rejects(
      "invalid_exact_evm_payload_recipient_mismatch",
      () => verify(v1(signed), [option], { now: clock }),
      "invalid_exact_evm_payload_recipient_mismatch",
    );
  });

  test("amount too low, and too high (the amount must be exact)", async () => {
    const option = callOption();
    for (const value of [9_999n, 10_001n]) {
      const signed = await signAuthorization(wallet(), option, { value });
      await rejects(
        "invalid_exact_evm_payload_authorization_value",
        () => verify(v1(signed), [option], { now: clock }),
        "invalid_exact_evm_payload_authorization_value",
      );
    }
  });

  test("a v2 payment whose authorization differs from its `accepted` amount", async () => {
    const option = callOption();
    const signed = await signAuthorization(wallet(), option, { value: 1n });
    await assert.rejects(
      () => verify(payment(v2Payment(option.v2, signed)), [option], { now: clock }),
      (error: unknown) =>
        error instanceof PaymentError &&
        error.reasonFor(2) === "invalid_exact_evm_payload_authorization_value_mismatch",
    );
  });

  test("expired, and expiring within the 6-second settlement margin", async () => {
    const option = callOption();
    for (const validBefore of [NOW_S - 1n, NOW_S, NOW_S + 5n]) {
      const signed = await signAuthorization(wallet(), option, { validBefore });
      await rejects("invalid_exact_evm_payload_authorization_valid_before", () =>
        verify(v1(signed), [option], { now: clock }),
      );
    }
  });

  test("not yet valid (validAfter must be strictly in the past)", async () => {
    const option = callOption();
    for (const validAfter of [NOW_S, NOW_S + 30n]) {
      const signed = await signAuthorization(wallet(), option, { validAfter });
      await rejects("invalid_exact_evm_payload_authorization_valid_after", () =>
        verify(v1(signed), [option], { now: clock }),
      );
    }
  });

  test("high-s (the malleable twin of a valid signature)", async () => {
    const option = callOption();
    const signed = await signAuthorization(wallet(), option);
    await rejects(
      "signature_high_s",
      () => verify(v1({ ...signed, signature: highS(signed.signature) }), [option], { now: clock }),
      "invalid_exact_evm_payload_signature",
    );
  });

  test("bad v", async () => {
    const option = callOption();
    const signed = await signAuthorization(wallet(), option);
    for (const v of [2, 26, 29, 37]) {
      await rejects("signature_bad_v", () =>
        verify(v1({ ...signed, signature: withV(signed.signature, v) }), [option], { now: clock }),
      );
    }
  });

  test("signed by someone other than `from`", async () => {
    const option = callOption();
    const signed = await signAuthorization(wallet(), option, { from: wallet().address });
    await rejects(
      "signer_mismatch",
      () => verify(v1(signed), [option], { now: clock }),
      "invalid_exact_evm_payload_signature",
    );
  });

  test("a signed field altered afterwards", async () => {
    const option = callOption();
    const signed = await signAuthorization(wallet(), option);
    const altered = {
      ...signed,
      authorization: {
        ...signed.authorization,
        validBefore: signed.authorization.validBefore + 1n,
      },
    };
    await rejects("signer_mismatch", () => verify(v1(altered), [option], { now: clock }));
  });

  test("smart-wallet length signatures cannot be checked locally", async () => {
    const option = callOption();
    const signed = await signAuthorization(wallet(), option);
    for (const signature of [signed.signature.slice(0, 130), `${signed.signature}00`]) {
      await rejects("signature_unsupported_length", () =>
        verify(v1({ ...signed, signature: signature as Hex }), [option], { now: clock }),
      );
    }
  });

  test("r = 0", async () => {
    const option = callOption();
    const signed = await signAuthorization(wallet(), option);
    const signature = `0x${"00".repeat(32)}${signed.signature.slice(66)}` as Hex;
    await rejects("invalid_exact_evm_payload_signature", () =>
      verify(v1({ ...signed, signature }), [option], { now: clock }),
    );
  });

  test("another network", async () => {
    const option = callOption();
    const signed = await signAuthorization(wallet(), option);
    await rejects("invalid_network", () =>
      verify(payment(v1Payment("base-sepolia", signed)), [option], { now: clock }),
    );
    const accepted = new Map(option.v2);
    accepted.set("network", "eip155:84532");
    await rejects("invalid_network", () =>
      verify(payment(v2Payment(accepted, signed)), [option], { now: clock }),
    );
  });

  test("a v2 `accepted` that is not one of ours (other asset, other amount, extra member)", async () => {
    const option = callOption();
    const signed = await signAuthorization(wallet(), option);
    const variants: [string, unknown][] = [
      ["asset", "0x036CbD53842c5426634e7929541eC2318f3dCF7e"],
      ["amount", "1"],
      ["maxTimeoutSeconds", 600],
      ["extra", jsonObject({ name: "USDC", version: "2" })],
      ["note", "hi"],
    ];
    for (const [key, value] of variants) {
      const accepted = new Map(option.v2);
      accepted.set(key, fromPlain(value));
      await rejects(
        "invalid_payment_requirements",
        () => verify(payment(v2Payment(accepted, signed)), [option], { now: clock }),
        "invalid_payment_requirements",
      );
    }
  });

  test("a requirement's token domain is part of what is signed", async () => {
    const option = callOption();
    const signed = await signAuthorization(wallet(), option);
    const otherDomain: ExactRequirement = { ...option, domain: { name: "USDC", version: "2" } };
    await rejects("signer_mismatch", () => verify(v1(signed), [otherDomain], { now: clock }));
  });
});
