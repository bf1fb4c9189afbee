/** Step E of verifier.md §4: pass, policy, spend cap, delivery gating and termination. */
import { describe, test } from "node:test";
import { type JsonObject, PyFloat } from "../../../../src/verifier/json/value.js";
import { type JsonInput, toJson } from "../../../../src/verifier/producer/index.js";
import {
  chain,
  decisionBody,
  expectOutcome,
  passBody,
  record,
  setInBody,
  settlementBody,
  standardRecords,
  V01,
  without,
} from "./fixtures.js";

const USD_1000 = { minor: 1000, currency: "USD" };
const CAP_1000 = "{'minor': 1000, 'currency': 'USD'}";

/** The standard task with this settlement amount under this pass spend cap. */
function settle(amount: JsonInput, cap: JsonInput = USD_1000): JsonObject {
  return chain(
    V01,
    standardRecords({
      pass: { body: { ...passBody, spend_cap: cap } },
      settlement: { body: { ...settlementBody, amount } },
    }),
  );
}

describe("E1/E2. the session pass", () => {
  test("malformed: a chain without session.pass.created, and then no termination check", () => {
    expectOutcome(chain(V01, [record("decision"), record("settlement")]), {
      verdict: "UNTRUSTED",
      errors: [["malformed", "chain has no session.pass.created receipt", null]],
    });
  });

  test("a pass whose body is not an object skips the policy, cap, delivery and termination checks", () => {
    const records = [
      record("pass", { body: "pass" }),
      record("decision", { body: { ...decisionBody, policy_version: "other" } }),
      record("settlement", {
        body: { ...settlementBody, amount: { minor: 5000, currency: "USD" } },
      }),
    ];
    expectOutcome(chain(V01, records), {
      verdict: "UNTRUSTED",
      errors: [
        ["malformed", "body is not an object", "pass"],
        ["chain_break", "prev digest mismatch", "decision"],
      ],
    });
  });

  test("only the first pass counts", () => {
    const records = standardRecords();
    records.splice(
      1,
      0,
      record("pass", { receiptId: "pass-2", body: { ...passBody, policy_version: "2" } }),
    );
    expectOutcome(chain(V01, records), { verdict: "TRUSTED" });
  });
});

describe("E3. policy_version", () => {
  test("policy_mismatch: a decision under another policy than the pass", () => {
    const records = standardRecords({
      decision: { body: { ...decisionBody, policy_version: "2026-09-18.1" } },
    });
    expectOutcome(chain(V01, records), {
      verdict: "UNTRUSTED",
      errors: [
        [
          "policy_mismatch",
          "decision policy '2026-09-18.1' != pass policy '2026-09-17.1'",
          "decision",
        ],
      ],
    });
  });

  test("policy_mismatch: a decision without policy_version compares None", () => {
    const records = standardRecords({
      decision: { body: without(decisionBody, "policy_version") },
    });
    expectOutcome(chain(V01, records), {
      verdict: "UNTRUSTED",
      errors: [
        ["malformed", "missing body fields ['policy_version']", "decision"],
        ["policy_mismatch", "decision policy None != pass policy '2026-09-17.1'", "decision"],
      ],
    });
  });

  test("policy_mismatch: compared with Python ==, so 1 == True and 1 == 1.0", () => {
    const pass = { body: { ...passBody, policy_version: 1 } };
    expectOutcome(
      chain(
        V01,
        standardRecords({ pass, decision: { body: { ...decisionBody, policy_version: true } } }),
      ),
      { verdict: "TRUSTED" },
    );
    // A float inside a receipt cannot be signed: only the encoding errors remain.
    const floatPolicy = standardRecords({
      pass,
      decision: { tamper: setInBody("policy_version", new PyFloat(1)) },
    });
    expectOutcome(chain(V01, floatPolicy), {
      verdict: "UNTRUSTED",
      errors: [
        ["malformed", "receipt is not canonically encodable (floats are rejected)", "decision"],
        ["bad_signature", "receipt is not canonically encodable", "decision"],
        ["chain_break", "prev digest mismatch", "execution"],
      ],
    });
  });
});

describe("E4/E5. spend cap", () => {
  test("malformed: a pass spend_cap that is not an object, and the cap is then ignored", () => {
    expectOutcome(settle({ minor: 5000, currency: "USD" }, "1000 USD"), {
      verdict: "UNTRUSTED",
      errors: [["malformed", "pass spend_cap is not an object", "pass"]],
    });
  });

  test("a null spend_cap means no cap", () => {
    expectOutcome(settle({ minor: 5000, currency: "USD" }, null), { verdict: "TRUSTED" });
  });

  test("cap_exceeded: minor units over the cap, with Python str() of both dicts", () => {
    expectOutcome(settle({ minor: 5000, currency: "USD" }), {
      verdict: "UNTRUSTED",
      errors: [
        [
          "cap_exceeded",
          `settlement {'minor': 5000, 'currency': 'USD'} exceeds cap ${CAP_1000}`,
          "settlement",
        ],
      ],
    });
    expectOutcome(settle({ minor: 1000, currency: "USD" }), { verdict: "TRUSTED" });
  });

  test("cap_exceeded: another currency exceeds the cap whatever the amount, before minor is read", () => {
    expectOutcome(settle({ minor: "not a number", currency: "EUR" }), {
      verdict: "UNTRUSTED",
      errors: [
        [
          "cap_exceeded",
          `settlement {'minor': 'not a number', 'currency': 'EUR'} exceeds cap ${CAP_1000}`,
          "settlement",
        ],
      ],
    });
  });

  test("cap_exceeded: currencies are compared with Python ==, so 1 == True", () => {
    expectOutcome(settle({ minor: 10, currency: true }, { minor: 10, currency: 1 }), {
      verdict: "TRUSTED",
    });
  });

  test("cap_exceeded: a missing minor defaults to 0, on the amount and on the cap", () => {
    expectOutcome(settle({ currency: "USD" }), { verdict: "TRUSTED" });
    expectOutcome(settle({ minor: 200, currency: "USD" }, { currency: "USD" }), {
      verdict: "UNTRUSTED",
      errors: [
        [
          "cap_exceeded",
          "settlement {'minor': 200, 'currency': 'USD'} exceeds cap {'currency': 'USD'}",
          "settlement",
        ],
      ],
    });
  });

  for (const falsy of [null, "", 0, false, [], {}]) {
    test(`cap_exceeded: a falsy minor (${JSON.stringify(falsy)}) counts as 0 ("minor or 0")`, () => {
      expectOutcome(settle({ minor: falsy, currency: "USD" }, { minor: 0, currency: "USD" }), {
        verdict: "TRUSTED",
      });
    });
  }

  test("cap_exceeded: a missing amount is {} (currency None differs) besides the missing field", () => {
    const records = standardRecords({ settlement: { body: without(settlementBody, "amount") } });
    expectOutcome(chain(V01, records), {
      verdict: "UNTRUSTED",
      errors: [
        ["malformed", "missing body fields ['amount']", "settlement"],
        ["cap_exceeded", `settlement {} exceeds cap ${CAP_1000}`, "settlement"],
      ],
    });
  });

  for (const [minor, cap, exceeded] of [
    [" 7 ", 7, false],
    [" 7 ", 6, true],
    ["+7", 6, true],
    ["1_000", 1000, false],
    ["1_001", 1000, true],
    ["\u0663", 3, false],
    ["\u0663", 2, true],
    [true, 0, true],
  ] as const) {
    test(`cap_exceeded: Python int(${JSON.stringify(minor)}) against a cap of ${cap}${exceeded ? " exceeds it" : " fits"}`, () => {
      const amount = { minor, currency: "USD" };
      const capMoney = { minor: cap, currency: "USD" };
      const amountText = `{'minor': ${typeof minor === "string" ? `'${minor}'` : "True"}, 'currency': 'USD'}`;
      expectOutcome(
        settle(amount, capMoney),
        exceeded
          ? {
              verdict: "UNTRUSTED",
              errors: [
                [
                  "cap_exceeded",
                  `settlement ${amountText} exceeds cap {'minor': ${cap}, 'currency': 'USD'}`,
                  "settlement",
                ],
              ],
            }
          : { verdict: "TRUSTED" },
      );
    });
  }

  for (const minor of ["7.0", "seven", "1__000", "_1", "1_", [1], { units: 1 }]) {
    test(`malformed: "settlement amount is not numeric" for minor ${JSON.stringify(minor)}`, () => {
      expectOutcome(settle({ minor, currency: "USD" }), {
        verdict: "UNTRUSTED",
        errors: [["malformed", "settlement amount is not numeric", "settlement"]],
      });
    });
  }

  test('malformed: "settlement amount is not numeric" when the cap\'s minor is not numeric', () => {
    expectOutcome(settle({ minor: 5, currency: "USD" }, { minor: "lots", currency: "USD" }), {
      verdict: "UNTRUSTED",
      errors: [["malformed", "settlement amount is not numeric", "settlement"]],
    });
  });

  test('malformed: "settlement amount is not numeric" for a NaN minor (after the encoding errors)', () => {
    const records = standardRecords({
      settlement: {
        tamper: setInBody("amount", toJson({ minor: new PyFloat(Number.NaN), currency: "USD" })),
      },
    });
    expectOutcome(chain(V01, records), {
      verdict: "UNTRUSTED",
      errors: [
        ["malformed", "receipt is not canonically encodable (floats are rejected)", "settlement"],
        ["bad_signature", "receipt is not canonically encodable", "settlement"],
        ["chain_break", "prev digest mismatch", "termination"],
        ["malformed", "settlement amount is not numeric", "settlement"],
      ],
    });
  });

  test("malformed: an amount that is not an object also skips the delivery check", () => {
    const records = standardRecords({ settlement: { body: { ...settlementBody, amount: 200 } } });
    const [pass, decision, execution, delivery, settlement, termination] = records;
    const settledFirst = [pass!, decision!, execution!, settlement!, delivery!, termination!];
    expectOutcome(chain(V01, settledFirst), {
      verdict: "UNTRUSTED",
      errors: [["malformed", "settlement amount is not an object", "settlement"]],
    });
  });

  test("malformed: the pinned hostile case settlement.amount=null (set after signing)", () => {
    const records = standardRecords({ settlement: { tamper: setInBody("amount", null) } });
    expectOutcome(chain(V01, records), {
      verdict: "UNTRUSTED",
      errors: [
        ["bad_signature", "signature does not verify", "settlement"],
        ["chain_break", "prev digest mismatch", "termination"],
        ["malformed", "settlement amount is not an object", "settlement"],
      ],
    });
  });
});

describe("E5. delivery gating", () => {
  const settledBeforeDelivery = (gated: JsonInput) => {
    const records = standardRecords({
      settlement: { body: { ...settlementBody, gated_on_delivery: gated } },
    });
    const [pass, decision, execution, delivery, settlement, termination] = records;
    return chain(V01, [pass!, settlement!, decision!, execution!, delivery!, termination!]);
  };

  test("delivery_before_settlement: a gated settlement with no earlier delivery attestation", () => {
    expectOutcome(settledBeforeDelivery(true), {
      verdict: "UNTRUSTED",
      errors: [
        [
          "delivery_before_settlement",
          "gated settlement recorded before any delivery attestation",
          "settlement",
        ],
      ],
    });
  });

  test("delivery_before_settlement: gated_on_delivery is read with Python truthiness", () => {
    expectOutcome(settledBeforeDelivery("no"), {
      verdict: "UNTRUSTED",
      errors: [
        [
          "delivery_before_settlement",
          "gated settlement recorded before any delivery attestation",
          "settlement",
        ],
      ],
    });
    for (const falsy of [false, 0, "", [], {}, null]) {
      expectOutcome(settledBeforeDelivery(falsy), { verdict: "TRUSTED" });
    }
  });

  test("any delivery attestation earlier in the chain satisfies the gate", () => {
    const records = standardRecords();
    const [pass, decision, execution, delivery, settlement, termination] = records;
    expectOutcome(
      chain(V01, [pass!, delivery!, decision!, execution!, settlement!, termination!]),
      {
        verdict: "TRUSTED",
      },
    );
  });
});

describe("E6. termination", () => {
  test("missing_termination: a task with no termination receipt", () => {
    expectOutcome(chain(V01, standardRecords().slice(0, 5)), {
      verdict: "UNTRUSTED",
      errors: [["missing_termination", "task has no termination receipt", null]],
    });
  });
});
