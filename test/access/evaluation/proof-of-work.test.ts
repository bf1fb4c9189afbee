/**
 * The proof of work, solved and checked with the same browser-safe module: its rule with the
 * server's OpenSSL SHA-256 and with @noble/hashes (what a page bundles), which must agree.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";
import { sha256 as nobleSha256 } from "@noble/hashes/sha2";
import { nodeSha256 } from "../../../src/access/evaluation/node-sha256.js";
import {
  checkProofOfWork,
  isWellFormedNonce,
  leadingZeroBits,
  parseChallenge,
  proofOfWorkDigest,
  type Sha256,
  solveProofOfWork,
  solveProofOfWorkAsync,
} from "../../../src/portable/proof-of-work.js";

const CHALLENGE = `evk1.12.1767276000.${"A".repeat(22)}.${"B".repeat(43)}`;

describe("proof of work", () => {
  test("leading zero bits count from the first byte's most significant bit", () => {
    const cases: [number[], number][] = [
      [[0x80], 0],
      [[0x7f], 1],
      [[0x01], 7],
      [[0x00, 0xff], 8],
      [[0x00, 0x00, 0x10], 19],
      [[0x00, 0x00, 0x00], 24],
      [new Array(32).fill(0), 256],
    ];
    for (const [bytes, bits] of cases) {
      assert.equal(leadingZeroBits(Uint8Array.from(bytes)), bits, JSON.stringify(bytes));
    }
  });

  test("the digest is SHA-256 of challenge and nonce concatenated, no separator", () => {
    const expected = createHash("sha256").update(`${CHALLENGE}nonce-1`, "ascii").digest();
    for (const sha256 of [nodeSha256, nobleSha256]) {
      assert.deepEqual(Buffer.from(proofOfWorkDigest(sha256, CHALLENGE, "nonce-1")), expected);
    }
  });

  test("a solution found with one SHA-256 checks with the other, at its difficulty only", () => {
    const pairs: [Sha256, Sha256][] = [
      [nodeSha256, nobleSha256],
      [nobleSha256, nodeSha256],
    ];
    for (const [solveWith, checkWith] of pairs) {
      const nonce = solveProofOfWork(solveWith, CHALLENGE, 12);
      assert.ok(nonce !== null && isWellFormedNonce(nonce));
      assert.equal(checkProofOfWork(checkWith, CHALLENGE, nonce, 12), true);
      const bits = leadingZeroBits(proofOfWorkDigest(checkWith, CHALLENGE, nonce));
      assert.ok(bits >= 12);
      assert.equal(checkProofOfWork(checkWith, CHALLENGE, nonce, bits + 1), false);
      // The work is bound to the challenge: another challenge does not take the nonce.
      const other = CHALLENGE.replace("A".repeat(22), "C".repeat(22));
      const otherBits = leadingZeroBits(proofOfWorkDigest(checkWith, other, nonce));
      assert.equal(checkProofOfWork(checkWith, other, nonce, 12), otherBits >= 12);
    }
  });

  test("the solver returns the first counter that works, after its prefix", () => {
    const nonce = solveProofOfWork(nodeSha256, CHALLENGE, 8, { prefix: "page-" });
    assert.ok(nonce !== null);
    const counter = Number(/^page-(\d+)$/.exec(nonce)?.[1]);
    for (let earlier = 0; earlier < counter; earlier += 1) {
      assert.equal(checkProofOfWork(nodeSha256, CHALLENGE, `page-${earlier}`, 8), false);
    }
    assert.equal(
      solveProofOfWork(nodeSha256, CHALLENGE, 8, { prefix: "page-", start: counter + 1 }) === nonce,
      false,
    );
    assert.equal(solveProofOfWork(nodeSha256, CHALLENGE, 0), "0");
    assert.equal(solveProofOfWork(nodeSha256, CHALLENGE, 64, { maxAttempts: 100 }), null);
  });

  test("the asynchronous solver yields, reports progress, and can be stopped", async () => {
    const progress: number[] = [];
    const nonce = await solveProofOfWorkAsync(nobleSha256, CHALLENGE, 10, {
      batch: 64,
      onProgress: (attempts) => progress.push(attempts),
    });
    assert.equal(nonce, solveProofOfWork(nobleSha256, CHALLENGE, 10));
    assert.deepEqual(
      progress,
      progress.map((_, index) => (index + 1) * 64),
    );
    const controller = new AbortController();
    controller.abort(new Error("stopped by the page"));
    await assert.rejects(
      solveProofOfWorkAsync(nobleSha256, CHALLENGE, 40, { signal: controller.signal }),
      /stopped by the page/,
    );
    await assert.rejects(
      solveProofOfWorkAsync(nobleSha256, CHALLENGE, 64, { maxAttempts: 10, batch: 4 }),
      /no nonce solves the challenge within 10 attempts/,
    );
  });

  test("nonces are 1–64 characters of A–Z a–z 0–9 - _; a bad one never checks", () => {
    for (const good of ["0", "a-Z_9", "x".repeat(64)]) assert.equal(isWellFormedNonce(good), true);
    for (const bad of ["", "x".repeat(65), "a b", "é", "1.5", "a/b"]) {
      assert.equal(isWellFormedNonce(bad), false, bad);
      assert.equal(checkProofOfWork(nodeSha256, CHALLENGE, bad, 0), false, bad);
    }
    assert.throws(() => solveProofOfWork(nodeSha256, CHALLENGE, 1, { prefix: "no space" }));
    assert.throws(() => solveProofOfWork(nodeSha256, CHALLENGE, 1, { prefix: "x".repeat(49) }));
  });

  test("a challenge token's fields are read without checking its MAC", () => {
    assert.deepEqual(parseChallenge(CHALLENGE), {
      difficulty: 12,
      expiresAt: 1_767_276_000,
      salt: "A".repeat(22),
      mac: "B".repeat(43),
      signed: `evk1.12.1767276000.${"A".repeat(22)}`,
    });
    for (const bad of [
      "",
      CHALLENGE.replace("evk1", "evk2"),
      CHALLENGE.replace(".12.", ".33."),
      CHALLENGE.replace(".12.", ".012."),
      CHALLENGE.replace("1767276000", "-1"),
      `${CHALLENGE}B`,
      CHALLENGE.replace("A".repeat(22), "A".repeat(21)),
      `${CHALLENGE}\n`,
    ]) {
      assert.equal(parseChallenge(bad), null, bad);
    }
  });

  test("the module imports nothing, so a browser bundle can take it as it is", () => {
    const source = readFileSync(
      new URL("../../../src/portable/proof-of-work.ts", import.meta.url),
      "utf8",
    );
    assert.deepEqual(source.match(/^\s*import\b.*$/gm) ?? [], []);
    assert.equal(/\brequire\(|\bprocess\.|\bBuffer\b/.test(source), false);
  });
});
