/** Payment requirements from configuration (service.md §9, §13; protocols.md §1.2–§1.4). */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { PaymentConfigError, PaymentError } from "../../src/payments/errors.js";
import {
  durationLabel,
  paymentRequirements,
  paymentSettings,
  requirementFromWire,
  usdToAtomic,
} from "../../src/payments/requirements.js";
import { toPlain } from "../../src/verifier/json/value.js";
import { callRequirements, PAY_TO, passRequirements, RESOURCE, testSettings } from "./support.js";

const BASE_USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";

describe("usdToAtomic", () => {
  test("converts decimal USD to 6-decimal atomic units", () => {
    assert.equal(usdToAtomic("0.01", 6), 10_000n);
    assert.equal(usdToAtomic("0.50", 6), 500_000n);
    assert.equal(usdToAtomic("1", 6), 1_000_000n);
    assert.equal(usdToAtomic("12.345600", 6), 12_345_600n);
  });

  test("refuses zero, negatives, exponents and sub-atomic precision", () => {
    for (const bad of ["0", "0.000", "-1", "1e-2", ".5", "0.0000001", "01", "", "$1"]) {
      assert.throws(() => usdToAtomic(bad, 6), PaymentConfigError, bad);
    }
  });
});

describe("paymentSettings", () => {
  test("defaults: USDC on Base, service.md §9 prices, 60 s timeout", () => {
    const settings = testSettings();
    assert.deepEqual(settings.network, { caip2: "eip155:8453", v1Name: "base", chainId: 8453 });
    assert.equal(settings.asset, BASE_USDC);
    assert.deepEqual(settings.domain, { name: "USD Coin", version: "2" });
    assert.deepEqual(settings.prices, { call: 10_000n, lease: 10_000n, day: 500_000n });
    assert.equal(settings.maxTimeoutSeconds, 60);
    assert.equal(settings.payTo, PAY_TO);
  });

  test("a v1 network name selects the network and its USDC domain", () => {
    const settings = paymentSettings({ payTo: PAY_TO, network: "base-sepolia" });
    assert.equal(settings.network.caip2, "eip155:84532");
    assert.equal(settings.asset, "0x036CbD53842c5426634e7929541eC2318f3dCF7e");
    assert.deepEqual(settings.domain, { name: "USDC", version: "2" });
  });

  test("an all-lower-case payee is accepted and checksummed", () => {
    assert.equal(paymentSettings({ payTo: PAY_TO.toLowerCase() }).payTo, PAY_TO);
  });

  test("configuration errors stop startup", () => {
    const bad = [
      { payTo: "0x209693Bc6afc0C5328bA36FaF03C514EF312287c" }, // checksum broken
      { payTo: "0x1234" },
      { payTo: PAY_TO, network: "eip155:999999" },
      { payTo: PAY_TO, network: "eip155:1" }, // no default asset there
      { payTo: PAY_TO, network: "eip155:1", asset: "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48" },
      { payTo: PAY_TO, pricesUsd: { lease: "0.50" } }, // lease and day indistinguishable in v1
      { payTo: PAY_TO, maxTimeoutSeconds: 5 },
    ];
    for (const input of bad) {
      assert.throws(() => paymentSettings(input), PaymentConfigError, JSON.stringify(input));
    }
  });

  test("another asset is accepted with its EIP-712 domain", () => {
    const settings = paymentSettings({
      payTo: PAY_TO,
      network: "eip155:1",
      asset: "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48",
      assetDomain: { name: "USD Coin", version: "2" },
    });
    assert.equal(settings.network.v1Name, "ethereum");
  });

  test("durations are worded for descriptions", () => {
    assert.equal(durationLabel(300), "5-minute");
    assert.equal(durationLabel(86_400), "24-hour");
    assert.equal(durationLabel(45), "45-second");
  });
});

describe("paymentRequirements", () => {
  test("a per-call requirement in both wire forms", () => {
    const set = callRequirements();
    assert.equal(set.options.length, 1);
    const [option] = set.options;
    assert.ok(option);
    assert.equal(option.kind, "call");
    assert.deepEqual(toPlain(option.v1), {
      scheme: "exact",
      network: "base",
      maxAmountRequired: "10000",
      resource: RESOURCE.url,
      description: RESOURCE.description,
      mimeType: "application/json",
      payTo: PAY_TO,
      maxTimeoutSeconds: 60,
      asset: BASE_USDC,
      extra: { name: "USD Coin", version: "2" },
    });
    assert.deepEqual(toPlain(option.v2), {
      scheme: "exact",
      network: "eip155:8453",
      amount: "10000",
      asset: BASE_USDC,
      payTo: PAY_TO,
      maxTimeoutSeconds: 60,
      extra: { name: "USD Coin", version: "2" },
    });
  });

  test("pass routes offer a lease and a day pass, told apart by amount", () => {
    const set = passRequirements();
    assert.deepEqual(
      set.options.map((option) => [option.kind, option.amount, option.v1.get("description")]),
      [
        ["lease", 10_000n, "Store a crystal (5-minute lease)"],
        ["day", 500_000n, "Store a crystal (24-hour day pass)"],
      ],
    );
  });

  test("requirements are deterministic: the same settings give deep-equal v2 forms", () => {
    const settings = testSettings();
    const a = paymentRequirements(settings, { resource: RESOURCE, offers: ["call"] });
    const b = paymentRequirements(settings, {
      resource: { url: "https://other.example/verify", description: "x" },
      offers: ["call"],
    });
    assert.deepEqual(toPlain(a.options[0]!.v2), toPlain(b.options[0]!.v2));
  });
});

describe("requirementFromWire", () => {
  test("reads back our own v1 and v2 forms", () => {
    const [option] = callRequirements().options;
    assert.ok(option);
    for (const version of [1, 2] as const) {
      const requirement = requirementFromWire(version === 1 ? option.v1 : option.v2, version);
      assert.equal(requirement.amount, 10_000n);
      assert.equal(requirement.network.chainId, 8453);
      assert.deepEqual(requirement.domain, { name: "USD Coin", version: "2" });
      assert.equal(requirement.asset.toLowerCase(), BASE_USDC.toLowerCase());
    }
  });

  test("a requirement without the EIP-712 domain, or on an unknown network, is refused", () => {
    const [option] = callRequirements().options;
    assert.ok(option);
    const noExtra = new Map(option.v1);
    noExtra.delete("extra");
    assert.throws(
      () => requirementFromWire(noExtra, 1),
      (error: unknown) =>
        error instanceof PaymentError && error.code === "invalid_payment_requirements",
    );
    const otherNetwork = new Map(option.v2);
    otherNetwork.set("network", "base");
    assert.throws(
      () => requirementFromWire(otherNetwork, 2),
      (error: unknown) => error instanceof PaymentError && error.code === "invalid_network",
    );
  });
});
