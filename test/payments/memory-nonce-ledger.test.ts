/** The embedded nonce ledger: the shared contract, plus expiry and bounded memory. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  MemoryNonceLedger,
  nonceLedgerKey,
  RESERVATION_GRACE_SECONDS,
  reservationExpiryMs,
} from "../../src/payments/nonce-ledger.js";
import { freshKey, nonceLedgerContract } from "./nonce-ledger-contract.js";

nonceLedgerContract("MemoryNonceLedger", async () => {
  const ledger = new MemoryNonceLedger();
  return { ledger, dispose: () => ledger.close() };
});

describe("MemoryNonceLedger", () => {
  test("a reservation blocks until exactly its expiry", async () => {
    let now = 1_000_000;
    const ledger = new MemoryNonceLedger({ now: () => now });
    const key = freshKey();
    assert.equal(await ledger.reserve(key, 2_000_000), true);
    now = 1_999_999;
    assert.equal(await ledger.reserve(key, 3_000_000), false);
    now = 2_000_000;
    assert.equal(await ledger.reserve(key, 3_000_000), true);
  });

  test("expired entries are swept as the ledger grows", async () => {
    let now = 1_000_000;
    const ledger = new MemoryNonceLedger({ now: () => now });
    for (let i = 0; i < 2000; i++) await ledger.reserve(freshKey(), now + 1000);
    now += 2000;
    for (let i = 0; i < 2100; i++) await ledger.reserve(freshKey(), now + 1_000_000);
    // The sweep at 4,096 entries dropped the 2,000 expired ones.
    assert.equal(ledger.size, 2100);
  });

  test("the ledger key names network, asset, payer and nonce in lower case", () => {
    assert.equal(
      nonceLedgerKey({ network: "eip155:8453", asset: "0xAB", payer: "0xCD", nonce: "0xEF" }),
      "x402:nonce:eip155:8453:0xab:0xcd:0xef",
    );
  });

  test("reservations last until validBefore plus a grace, capped for absurd validBefore", () => {
    assert.equal(
      reservationExpiryMs(1_767_225_660n),
      (1_767_225_660 + RESERVATION_GRACE_SECONDS) * 1000,
    );
    assert.equal(reservationExpiryMs((1n << 256n) - 1n), 253_402_300_799_000);
  });
});
