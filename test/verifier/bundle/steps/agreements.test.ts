/** Step F of verifier.md §4: offers, accepts and the records bound to an accept (0.4+). */
import { describe, test } from "node:test";
import { recordDigest } from "../../../../src/verifier/crypto/digest.js";
import type { JsonObject } from "../../../../src/verifier/json/value.js";
import { BundleBuilder, type BundleRecord } from "../../../../src/verifier/producer/index.js";
import {
  acceptBody,
  agent,
  decisionBody,
  digestOf,
  EARLIER,
  expectOutcome,
  gate,
  ISSUED_AT,
  LATER,
  offerBody,
  record,
  stranger,
  TASK_ID,
  V03,
  V04,
  without,
} from "./fixtures.js";

interface AgreementEdits {
  offer?: Partial<BundleRecord>;
  accept?: (offer: JsonObject) => Partial<BundleRecord>;
  /** The decision bound to the accept; by default issued by the offeree with `agreement_ref`. */
  decision?: (accept: JsonObject) => Partial<BundleRecord>;
}

function acceptRecord(offer: JsonObject, overrides: Partial<BundleRecord> = {}): BundleRecord {
  return {
    type: "agreement.accept",
    body: acceptBody(offer),
    signer: agent,
    issuedAt: ISSUED_AT,
    receiptId: "accept",
    ...overrides,
  };
}

const boundBody = (accept: JsonObject) => ({
  ...decisionBody,
  agreement_ref: recordDigest(accept),
});

/** pass, offer (gate → agent), accept (by agent), decision bound to the accept, termination. */
function agreement(spec: string, edits: AgreementEdits = {}): JsonObject {
  const builder = new BundleBuilder(spec, TASK_ID);
  builder.append(record("pass"));
  const offer = builder.append(record("offer", edits.offer));
  const accept = builder.append(acceptRecord(offer, edits.accept?.(offer)));
  builder.append(
    record("decision", { signer: agent, body: boundBody(accept), ...edits.decision?.(accept) }),
  );
  builder.append(record("termination"));
  return builder.build();
}

describe("F. offers and accepts", () => {
  test("an offer accepted under 0.3 and a 0.4 agreement with a bound record are TRUSTED", () => {
    expectOutcome(agreement(V03), { verdict: "TRUSTED" });
    expectOutcome(agreement(V04), { verdict: "TRUSTED" });
  });

  for (const [label, offerRef] of [
    ["an unknown digest", digestOf("0")],
    ["a non-string", 5],
  ] as const) {
    test(`missing_offer: an offer_ref that is ${label}`, () => {
      const bundle = agreement(V04, {
        accept: (offer) => ({ body: { ...acceptBody(offer), offer_ref: offerRef } }),
      });
      expectOutcome(bundle, {
        verdict: "INSUFFICIENT_EVIDENCE",
        insufficient: ["missing_offer:accept"],
      });
    });
  }

  test("missing_offer: the accept's receipt id is str()'d, so a missing one prints None", () => {
    const bundle = agreement(V04, {
      accept: (offer) => ({
        envelope: { receipt_id: null },
        body: { ...acceptBody(offer), offer_ref: digestOf("0") },
      }),
    });
    expectOutcome(bundle, {
      verdict: "INSUFFICIENT_EVIDENCE",
      insufficient: ["missing_offer:None"],
    });
  });

  test("malformed: an offer valid_until that is not a timestamp, reported on the offer; checking stops", () => {
    const bundle = agreement(V04, {
      offer: { body: { ...offerBody, valid_until: "tomorrow" } },
      accept: (offer) => ({
        signer: stranger,
        body: { ...acceptBody(offer), terms_hash: digestOf("9") },
      }),
    });
    expectOutcome(bundle, {
      verdict: "UNTRUSTED",
      errors: [["malformed", "offer valid_until not RFC 3339 UTC: 'tomorrow'", "offer"]],
    });
  });

  for (const member of ["terms_hash", "offer_id"]) {
    test(`offer_mismatch: the accept's ${member} differs from the offer's; checking stops`, () => {
      const bundle = agreement(V04, {
        // Signed by a stranger too: the offeree check is never reached.
        accept: (offer) => ({
          signer: stranger,
          body: { ...acceptBody(offer), [member]: "other" },
        }),
        decision: () => ({ signer: stranger }),
      });
      expectOutcome(bundle, {
        verdict: "UNTRUSTED",
        errors: [
          ["offer_mismatch", "accept does not match the referenced offer", "accept"],
          [
            "agreement_issuer_mismatch",
            `bound receipt issuer '${stranger.did}' is not the offeree`,
            "decision",
          ],
        ],
      });
    });
  }

  test("offer_mismatch: offer_id and terms_hash are compared with Python ==, so 1 == True", () => {
    const bundle = agreement(V04, {
      offer: { body: { ...offerBody, offer_id: 1 } },
      accept: (offer) => ({ body: { ...acceptBody(offer), offer_id: true } }),
    });
    expectOutcome(bundle, { verdict: "TRUSTED" });
  });

  test("offer_expired: an accept after valid_until; checking continues (accept_before_offer too)", () => {
    const bundle = agreement(V04, {
      offer: { issuedAt: LATER, body: { ...offerBody, valid_until: EARLIER } },
    });
    expectOutcome(bundle, {
      verdict: "UNTRUSTED",
      errors: [
        ["offer_expired", `accept issued after offer valid_until ${EARLIER}`, "accept"],
        ["accept_before_offer", "accept issued before offer offer", "accept"],
      ],
    });
  });

  test("offer_expired: an accept issued exactly at valid_until is in time", () => {
    const bundle = agreement(V04, { offer: { body: { ...offerBody, valid_until: ISSUED_AT } } });
    expectOutcome(bundle, { verdict: "TRUSTED" });
  });

  test("the offeree rules do not apply to a 0.3 accept", () => {
    const bundle = agreement(V03, {
      accept: (offer) => ({ signer: stranger, body: without(acceptBody(offer), "offeree") }),
    });
    expectOutcome(bundle, { verdict: "TRUSTED" });
  });

  test("malformed: a 0.4 accept requires offeree, and a missing one is not a string (None)", () => {
    const bundle = agreement(V04, {
      accept: (offer) => ({ body: without(acceptBody(offer), "offeree") }),
    });
    expectOutcome(bundle, {
      verdict: "UNTRUSTED",
      errors: [
        ["malformed", "missing body fields ['offeree']", "accept"],
        ["malformed", "accept offeree is not a string: None", "accept"],
      ],
      // The accept's offeree is not a string, so the bound record's issuer is not compared.
    });
  });

  for (const [offeree, repr] of [
    ["", "''"],
    [5, "5"],
  ] as const) {
    test(`malformed: accept offeree ${repr} is not a non-empty string`, () => {
      const bundle = agreement(V04, {
        accept: (offer) => ({ body: acceptBody(offer, offeree) }),
      });
      const errors = [["malformed", `accept offeree is not a string: ${repr}`, "accept"]] as const;
      // An empty-string offeree is still a string, so the bound record is compared with it.
      expectOutcome(bundle, {
        verdict: "UNTRUSTED",
        errors:
          offeree === ""
            ? [
                ...errors,
                [
                  "agreement_issuer_mismatch",
                  `bound receipt issuer '${agent.did}' is not the offeree`,
                  "decision",
                ],
              ]
            : errors,
      });
    });
  }

  test("offeree_mismatch: an accept signed by someone other than its offeree (vector 17c)", () => {
    const bundle = agreement(V04, { accept: () => ({ signer: stranger }) });
    expectOutcome(bundle, {
      verdict: "UNTRUSTED",
      errors: [
        [
          "offeree_mismatch",
          `accept offeree '${agent.did}' does not match the signer '${stranger.did}' / offer`,
          "accept",
        ],
      ],
    });
  });

  test("offeree_mismatch: an accept offeree other than the offer's, and its bound record (vector 17b)", () => {
    const bundle = agreement(V04, {
      accept: (offer) => ({ signer: stranger, body: acceptBody(offer, stranger.did) }),
    });
    expectOutcome(bundle, {
      verdict: "UNTRUSTED",
      errors: [
        [
          "offeree_mismatch",
          `accept offeree '${stranger.did}' does not match the signer '${stranger.did}' / offer`,
          "accept",
        ],
        [
          "agreement_issuer_mismatch",
          `bound receipt issuer '${agent.did}' is not the offeree`,
          "decision",
        ],
      ],
    });
  });

  test("accept_before_offer: an accept issued before the offer it accepts (vector 17d)", () => {
    const bundle = agreement(V04, { offer: { issuedAt: LATER } });
    expectOutcome(bundle, {
      verdict: "UNTRUSTED",
      errors: [["accept_before_offer", "accept issued before offer offer", "accept"]],
    });
  });

  test("offers with the same offer_id are told apart by digest (vector 17j)", () => {
    const builder = new BundleBuilder(V04, TASK_ID);
    builder.append(record("pass"));
    builder.append(record("offer", { receiptId: "offer-a", body: { ...offerBody, nonce: "a" } }));
    const second = builder.append(
      record("offer", { receiptId: "offer-b", body: { ...offerBody, nonce: "b" } }),
    );
    const accept = builder.append(acceptRecord(second));
    builder.append(record("decision", { signer: agent, body: boundBody(accept) }));
    builder.append(record("termination"));
    expectOutcome(builder.build(), { verdict: "TRUSTED" });
  });
});

describe("F. records bound to an accept", () => {
  for (const [label, ref] of [
    ["an unknown digest", digestOf("0")],
    ["a non-string", 5],
  ] as const) {
    test(`missing_agreement: an agreement_ref that is ${label} (vector 17g)`, () => {
      const bundle = agreement(V04, {
        decision: () => ({ body: { ...decisionBody, agreement_ref: ref } }),
      });
      expectOutcome(bundle, {
        verdict: "INSUFFICIENT_EVIDENCE",
        provisional: ["agreement_unreferenced:accept"],
        insufficient: ["missing_agreement:decision"],
      });
    });
  }

  test("agreement_before_accept: a bound record issued before its accept (vector 17e)", () => {
    const bundle = agreement(V04, { decision: () => ({ issuedAt: EARLIER }) });
    expectOutcome(bundle, {
      verdict: "UNTRUSTED",
      errors: [
        ["agreement_before_accept", "bound receipt issued before its accept accept", "decision"],
      ],
    });
  });

  test("agreement_issuer_mismatch: a bound record not issued by the accept's offeree (vector 17f)", () => {
    const bundle = agreement(V04, { decision: () => ({ signer: gate }) });
    expectOutcome(bundle, {
      verdict: "UNTRUSTED",
      errors: [
        [
          "agreement_issuer_mismatch",
          `bound receipt issuer '${gate.did}' is not the offeree`,
          "decision",
        ],
      ],
    });
  });

  test("agreement_ref is ignored on records under 0.1 to 0.3 (vector 18)", () => {
    const bundle = agreement(V04, {
      decision: () => ({ spec: V03, body: { ...decisionBody, agreement_ref: digestOf("0") } }),
    });
    expectOutcome(bundle, {
      verdict: "PROVISIONAL",
      provisional: ["agreement_unreferenced:accept"],
    });
  });

  test("agreement_unreferenced: a 0.4 accept no record binds to; a 0.3 accept is exempt", () => {
    const unbound = () => ({ signer: gate, body: decisionBody });
    expectOutcome(agreement(V04, { decision: unbound }), {
      verdict: "PROVISIONAL",
      provisional: ["agreement_unreferenced:accept"],
    });
    expectOutcome(agreement(V03, { decision: unbound }), { verdict: "TRUSTED" });
  });

  test("missing_agreement_ref: the offeree's record after its accept carries no agreement_ref (vector 17h)", () => {
    const bundle = agreement(V04, { decision: () => ({ body: decisionBody }) });
    expectOutcome(bundle, {
      verdict: "PROVISIONAL",
      provisional: ["agreement_unreferenced:accept", "missing_agreement_ref:decision"],
    });
  });

  test("missing_agreement_ref: at most one reason per record, however many accepts apply", () => {
    const builder = new BundleBuilder(V04, TASK_ID);
    builder.append(record("pass"));
    const offer = builder.append(record("offer"));
    builder.append(acceptRecord(offer));
    builder.append(acceptRecord(offer, { receiptId: "accept-2" }));
    builder.append(record("decision", { signer: agent }));
    builder.append(record("termination"));
    expectOutcome(builder.build(), {
      verdict: "PROVISIONAL",
      provisional: [
        "agreement_unreferenced:accept",
        "agreement_unreferenced:accept-2",
        "missing_agreement_ref:decision",
      ],
    });
  });

  test("missing_agreement_ref: only accepts issued at or before the record count", () => {
    const bundle = agreement(V04, { decision: () => ({ issuedAt: EARLIER, body: decisionBody }) });
    expectOutcome(bundle, {
      verdict: "PROVISIONAL",
      provisional: ["agreement_unreferenced:accept"],
    });
  });
});
