/**
 * What every `ChallengeLedger` must do (one contract suite, run against each mode's
 * implementation). Expiry is exercised only through instants already past, so the same suite
 * runs against Redis without waiting.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, test } from "node:test";
import type { ChallengeLedger } from "../../../src/access/evaluation/challenge-ledger.js";

export interface ChallengeLedgerFixture {
  ledger: ChallengeLedger;
  /** Closes the ledger and removes what the fixture created. */
  dispose(): Promise<void>;
}

const salt = () => randomBytes(16).toString("base64url");
const inFiveMinutes = () => Date.now() + 300_000;

export function challengeLedgerContract(
  name: string,
  open: () => Promise<ChallengeLedgerFixture>,
): void {
  describe(`ChallengeLedger contract: ${name}`, () => {
    let fixture: ChallengeLedgerFixture;
    let ledger: ChallengeLedger;
    before(async () => {
      fixture = await open();
      ledger = fixture.ledger;
    });
    after(() => fixture.dispose());

    test("a challenge is spent once; spending it again fails", async () => {
      const spent = salt();
      assert.equal(await ledger.spend(spent, inFiveMinutes()), true);
      assert.equal(await ledger.spend(spent, inFiveMinutes()), false);
      assert.equal(await ledger.spend(salt(), inFiveMinutes()), true);
    });

    test("of concurrent spends of one challenge exactly one succeeds", async () => {
      const contested = salt();
      const results = await Promise.all(
        Array.from({ length: 16 }, () => ledger.spend(contested, inFiveMinutes())),
      );
      assert.equal(results.filter(Boolean).length, 1);
    });

    test("a record whose expiry has passed is forgotten", async () => {
      const old = salt();
      assert.equal(await ledger.spend(old, Date.now() - 1000), true);
      assert.equal(await ledger.spend(old, inFiveMinutes()), true);
      assert.equal(await ledger.spend(old, inFiveMinutes()), false);
    });

    test("an unusable expiry is refused", async () => {
      await assert.rejects(ledger.spend(salt(), Number.NaN), RangeError);
    });
  });
}
