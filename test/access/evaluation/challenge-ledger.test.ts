/** The embedded replay ledger of evaluation-key challenges: the contract, and its sweeping. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { MemoryChallengeLedger } from "../../../src/access/evaluation/challenge-ledger.js";
import { challengeLedgerContract } from "./challenge-ledger-contract.js";

challengeLedgerContract("MemoryChallengeLedger", async () => {
  const ledger = new MemoryChallengeLedger();
  return { ledger, dispose: () => ledger.close() };
});

test("MemoryChallengeLedger forgets expired challenges as it grows", async () => {
  const clock = { now: 1_000_000 };
  const ledger = new MemoryChallengeLedger(() => clock.now);
  for (let index = 0; index < 1023; index += 1) {
    assert.equal(await ledger.spend(`old-${index}`, clock.now + 10), true);
  }
  clock.now += 20;
  await ledger.spend("new", clock.now + 10);
  assert.equal(ledger.size, 1);
});
