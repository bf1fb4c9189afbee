/** The memory budget's shares and reserve (issue 32, finding 2 and the many-keys attack). */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { MemoryBudget } from "../../../src/service/http/body-admission.js";

describe("MemoryBudget", () => {
  const LIMIT = 1024;

  test("a principal past its share is refused as a share, others are admitted", () => {
    const budget = new MemoryBudget(LIMIT, 25);
    assert.equal(budget.tryHold("a", 256), null);
    assert.equal(budget.tryHold("a", 1), "share");
    assert.equal(budget.tryHold("b", 256), null);
    assert.equal(budget.used, 512);
  });

  test("several principals at their shares leave the reserve to newcomers' small requests", () => {
    // Five keys of one attacker, each at a quarter: without the reserve the budget is full.
    const budget = new MemoryBudget(LIMIT, 25);
    for (const key of ["k1", "k2", "k3"]) assert.equal(budget.tryHold(key, 256), null);
    assert.equal(budget.tryHold("k4", 128), null);
    assert.equal(budget.used, budget.openLimit);
    assert.equal(budget.tryHold("k4", 1), "budget");
    assert.equal(budget.tryHold("k5", 256), "budget");
    // The reserve (128 bytes) admits 16 bytes per principal.
    assert.equal(budget.newcomerLimit, 16);
    assert.equal(budget.tryHold("honest", 16), null);
    assert.equal(budget.tryHold("honest", 1), "budget");
    assert.equal(budget.tryHold("k5", 16), null);
    // Once released, what a principal held no longer counts.
    budget.release("k1", 256);
    assert.equal(budget.heldBy("k1"), 0);
    assert.equal(budget.tryHold("honest", 200), null);
  });

  test("without shares there is no reserve: one principal may hold the whole budget", () => {
    const budget = new MemoryBudget(LIMIT);
    assert.equal(budget.openLimit, LIMIT);
    assert.equal(budget.tryHold("only", LIMIT), null);
    assert.equal(budget.tryHold("other", 1), "budget");
  });
});
