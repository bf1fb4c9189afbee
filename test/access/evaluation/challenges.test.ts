/** Stateless challenges: signed by the deployment, checked for MAC, expiry and work, in order. */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { describe, test } from "node:test";
import {
  CHALLENGE_TTL_SECONDS,
  ChallengeSigner,
} from "../../../src/access/evaluation/challenges.js";
import { nodeSha256 } from "../../../src/access/evaluation/node-sha256.js";
import { parseChallenge, solveProofOfWork } from "../../../src/portable/proof-of-work.js";
import { InternalToken } from "../../../src/service/internal-token.js";

const T0 = Date.parse("2026-11-21T10:00:00Z");

function solved(signer: ChallengeSigner, difficulty: number, nowMs = T0) {
  const { challenge } = signer.issue(difficulty, nowMs);
  const nonce = solveProofOfWork(nodeSha256, challenge, difficulty);
  assert.ok(nonce !== null);
  return { challenge, nonce };
}

describe("ChallengeSigner", () => {
  const signer = new ChallengeSigner(randomBytes(32));

  test("a challenge carries its difficulty and expiry, and a fresh salt", () => {
    const first = signer.issue(9, T0 + 400);
    const second = signer.issue(9, T0 + 400);
    assert.equal(first.difficulty, 9);
    assert.equal(first.expiresAt, T0 / 1000 + CHALLENGE_TTL_SECONDS);
    const fields = parseChallenge(first.challenge);
    assert.equal(fields?.difficulty, 9);
    assert.equal(fields?.expiresAt, first.expiresAt);
    assert.notEqual(fields?.salt, parseChallenge(second.challenge)?.salt);
    assert.throws(() => signer.issue(33, T0), RangeError);
  });

  test("a solved challenge checks until it expires", () => {
    const { challenge, nonce } = solved(signer, 8);
    assert.equal(signer.check(challenge, nonce, T0).ok, true);
    const last = T0 + CHALLENGE_TTL_SECONDS * 1000 - 1;
    assert.equal(signer.check(challenge, nonce, last).ok, true);
    assert.deepEqual(signer.check(challenge, nonce, last + 1), {
      ok: false,
      refusal: "challenge_expired",
    });
  });

  test("an altered challenge, or another deployment's, is invalid_challenge", () => {
    const { challenge, nonce } = solved(signer, 4);
    const fields = parseChallenge(challenge);
    assert.ok(fields !== null);
    const invalid = { ok: false, refusal: "invalid_challenge" };
    // Easier work, a later expiry, another salt: the MAC no longer matches.
    for (const altered of [
      challenge.replace("evk1.4.", "evk1.0."),
      challenge.replace(`.${fields.expiresAt}.`, `.${fields.expiresAt + 3600}.`),
      challenge.replace(fields.salt, "A".repeat(22)),
      challenge.replace(fields.mac, "A".repeat(43)),
      "not a challenge",
    ]) {
      assert.deepEqual(signer.check(altered, nonce, T0), invalid, altered);
    }
    const other = new ChallengeSigner(randomBytes(32));
    assert.deepEqual(other.check(challenge, nonce, T0), invalid);
    // Checked before the expiry: an expired forgery is still a forgery.
    assert.deepEqual(other.check(challenge, nonce, T0 + 86_400_000), invalid);
  });

  test("work below the challenge's difficulty is insufficient_proof_of_work", () => {
    const { challenge } = signer.issue(12, T0);
    let weak = 0;
    while (solveProofOfWork(nodeSha256, challenge, 12, { start: weak, maxAttempts: 1 }) !== null) {
      weak += 1;
    }
    assert.deepEqual(signer.check(challenge, String(weak), T0), {
      ok: false,
      refusal: "insufficient_proof_of_work",
    });
    assert.deepEqual(signer.check(challenge, "not a nonce!", T0), {
      ok: false,
      refusal: "insufficient_proof_of_work",
    });
  });

  test("instances sharing the internal token share the key; other labels and tokens do not", () => {
    const token = randomBytes(32).toString("hex");
    const label = "receiptd evaluation-keys challenge v1";
    const one = new ChallengeSigner(new InternalToken(token).deriveKey(label));
    const two = new ChallengeSigner(new InternalToken(token).deriveKey(label));
    const { challenge, nonce } = solved(one, 4);
    assert.equal(two.check(challenge, nonce, T0).ok, true);
    const otherLabel = new ChallengeSigner(new InternalToken(token).deriveKey(`${label}x`));
    assert.equal(otherLabel.check(challenge, nonce, T0).ok, false);
    const otherToken = new InternalToken(randomBytes(32).toString("hex")).deriveKey(label);
    assert.equal(new ChallengeSigner(otherToken).check(challenge, nonce, T0).ok, false);
  });
});
