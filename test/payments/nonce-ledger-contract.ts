/**
 * The behaviour every `NonceLedger` must have (architecture.md: one contract suite, run
 * against each implementation). Expiry is exercised with real time only through expiries
 * already in the past, so the same suite can run against Redis.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, test } from "node:test";
import type { NonceKey, NonceLedger } from "../../src/payments/nonce-ledger.js";

export interface LedgerFixture {
  ledger: NonceLedger;
  /** Closes the ledger and removes whatever the fixture created. */
  dispose(): Promise<void>;
}

const hex = (bytes: number) => `0x${randomBytes(bytes).toString("hex")}`;

/** A fresh key: every test works on its own authorizations. */
export function freshKey(): NonceKey {
  return {
    network: "eip155:8453",
    asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
    payer: hex(20),
    nonce: hex(32),
  };
}

const inAnHour = () => Date.now() + 3_600_000;

export function nonceLedgerContract(name: string, open: () => Promise<LedgerFixture>): void {
  describe(`NonceLedger contract: ${name}`, () => {
    let fixture: LedgerFixture;
    let ledger: NonceLedger;
    before(async () => {
      fixture = await open();
      ledger = fixture.ledger;
    });
    after(() => fixture.dispose());

    test("the first reservation succeeds; any later one fails", async () => {
      const key = freshKey();
      assert.equal(await ledger.reserve(key, inAnHour()), true);
      assert.equal(await ledger.reserve(key, inAnHour()), false);
      assert.equal(await ledger.reserve({ ...key }, inAnHour()), false);
    });

    test("addresses and nonces compare case-insensitively", async () => {
      const key = freshKey();
      assert.equal(await ledger.reserve(key, inAnHour()), true);
      const upper = {
        ...key,
        asset: key.asset.toUpperCase().replace("0X", "0x"),
        payer: key.payer.toUpperCase().replace("0X", "0x"),
        nonce: key.nonce.toUpperCase().replace("0X", "0x"),
      };
      assert.equal(await ledger.reserve(upper, inAnHour()), false);
    });

    test("a different network, asset, payer or nonce is a different authorization", async () => {
      const key = freshKey();
      assert.equal(await ledger.reserve(key, inAnHour()), true);
      const variants: NonceKey[] = [
        { ...key, network: "eip155:84532" },
        { ...key, asset: "0x036CbD53842c5426634e7929541eC2318f3dCF7e" },
        { ...key, payer: hex(20) },
        { ...key, nonce: hex(32) },
      ];
      for (const variant of variants) {
        assert.equal(await ledger.reserve(variant, inAnHour()), true, JSON.stringify(variant));
      }
    });

    test("concurrent reservations of one authorization: exactly one wins", async () => {
      const key = freshKey();
      const results = await Promise.all(
        Array.from({ length: 16 }, () => ledger.reserve(key, inAnHour())),
      );
      assert.equal(results.filter(Boolean).length, 1);
    });

    test("a released reservation can be taken again", async () => {
      const key = freshKey();
      assert.equal(await ledger.reserve(key, inAnHour()), true);
      await ledger.release(key);
      assert.equal(await ledger.reserve(key, inAnHour()), true);
      assert.equal(await ledger.reserve(key, inAnHour()), false);
    });

    test("releasing what was never reserved is harmless", async () => {
      await ledger.release(freshKey());
    });

    test("a reservation past its expiry no longer blocks", async () => {
      const key = freshKey();
      assert.equal(await ledger.reserve(key, Date.now() - 1000), true);
      assert.equal(await ledger.reserve(key, inAnHour()), true);
      assert.equal(await ledger.reserve(key, inAnHour()), false);
    });
  });
}
