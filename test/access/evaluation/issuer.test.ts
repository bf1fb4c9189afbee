/**
 * The issuer of evaluation keys, without HTTP: the order of its checks, the three daily limits,
 * the rising difficulty
 * and what is given back when a later step refuses or fails.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { KeyStore } from "../../../src/access/api-keys.js";
import { MemoryChallengeLedger } from "../../../src/access/evaluation/challenge-ledger.js";
import {
  ADDRESS_BUCKET_PREFIX,
  ChallengeLedgerUnavailableError,
  difficultyAfter,
  EvaluationKeys,
  type EvaluationTerms,
  ISSUANCE_BUCKET,
} from "../../../src/access/evaluation/issuer.js";
import { nodeSha256 } from "../../../src/access/evaluation/node-sha256.js";
import { MemoryCapStore } from "../../../src/access/memory-cap-store.js";
import { parseChallenge, solveProofOfWork } from "../../../src/portable/proof-of-work.js";
import {
  type DocumentStore,
  DocumentStoreUnavailableError,
} from "../../../src/storage/document-store.js";
import { FsDocumentStore } from "../../../src/storage/fs-document-store.js";

const T0 = Date.parse("2026-11-21T10:00:00Z");
const TERMS: EvaluationTerms = {
  keyDailyCap: 7,
  ttlHours: 2,
  perAddressDaily: 1,
  perNetworkDaily: 3,
  perDay: 3,
  powBits: 4,
  powRampBits: 0,
};

describe("EvaluationKeys", () => {
  let dataDir: string;
  let documents: FsDocumentStore;
  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), "receiptd-evaluation-"));
    documents = new FsDocumentStore(dataDir);
  });
  after(async () => {
    await documents.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  function issuer(options: { terms?: Partial<EvaluationTerms>; store?: DocumentStore } = {}) {
    const clock = { now: T0 };
    const caps = new MemoryCapStore(() => clock.now);
    const ledger = new MemoryChallengeLedger(() => clock.now);
    const keys = new KeyStore(options.store ?? documents, {
      defaultDailyCap: 1000,
      now: () => clock.now,
    });
    const evaluation = new EvaluationKeys({
      terms: { ...TERMS, ...options.terms },
      keys,
      caps,
      ledger,
      challengeKey: randomBytes(32),
      addressKey: randomBytes(32),
      clock: () => clock.now,
    });
    const solved = async () => {
      const { challenge, difficulty } = await evaluation.challenge();
      return { challenge, nonce: solveProofOfWork(nodeSha256, challenge, difficulty) ?? "" };
    };
    return { clock, caps, ledger, keys, evaluation, solved };
  }

  test("issues a key with the terms: its cap, its lifetime, findable by the key store", async () => {
    const { evaluation, solved, keys } = issuer();
    const outcome = await evaluation.issue({ ...(await solved()), clientAddress: "192.0.2.1" });
    assert.ok(outcome.ok);
    const { key, record } = outcome.created;
    assert.equal(record.kind, "evaluation");
    assert.equal(record.dailyCap, 7);
    assert.equal(record.expiresAt, "2026-11-21T12:00:00Z");
    const authentication = await keys.authenticate(key);
    assert.equal(authentication.ok && authentication.dailyCap, 7);
  });

  test("a challenge that fails its checks counts against nothing and is not spent", async () => {
    const { evaluation, solved, caps } = issuer();
    const { challenge, nonce } = await solved();
    const tampered = { challenge: challenge.replace("evk1.4.", "evk1.0."), nonce };
    const refusals = [
      await evaluation.issue({ ...tampered, clientAddress: "192.0.2.1" }),
      await evaluation.issue({ challenge, nonce: "x!", clientAddress: "192.0.2.1" }),
    ].map((outcome) => !outcome.ok && outcome.refusal.code);
    assert.deepEqual(refusals, ["invalid_challenge", "insufficient_proof_of_work"]);
    assert.equal(caps.size, 0);
    // Not spent: the real nonce still buys its key.
    assert.equal(
      (await evaluation.issue({ challenge, nonce, clientAddress: "192.0.2.1" })).ok,
      true,
    );
  });

  test("a spent challenge is refused before any limit counts it", async () => {
    const { evaluation, solved, caps } = issuer({ terms: { perAddressDaily: 5 } });
    const request = { ...(await solved()), clientAddress: "192.0.2.1" };
    assert.equal((await evaluation.issue(request)).ok, true);
    const sizeAfterFirst = caps.size;
    const replay = await evaluation.issue({ ...request, clientAddress: "198.51.100.9" });
    assert.deepEqual(replay, { ok: false, refusal: { code: "challenge_already_used" } });
    assert.equal(caps.size, sizeAfterFirst, "the replay created no counter for its address");
  });

  test("an expired challenge is refused", async () => {
    const { evaluation, solved, clock } = issuer();
    const request = { ...(await solved()), clientAddress: "192.0.2.1" };
    clock.now += evaluation.challengeTtlSeconds * 1000;
    const outcome = await evaluation.issue(request);
    assert.deepEqual(outcome, { ok: false, refusal: { code: "challenge_expired" } });
  });

  test("one key per address per day (IPv6: per /64), with the wait to midnight", async () => {
    const { evaluation, solved, clock } = issuer({ terms: { perDay: 100, perNetworkDaily: 100 } });
    assert.equal(
      (await evaluation.issue({ ...(await solved()), clientAddress: "2001:db8:1:2::1" })).ok,
      true,
    );
    const again = await evaluation.issue({
      ...(await solved()),
      clientAddress: "2001:db8:1:2::ffff",
    });
    assert.deepEqual(again, {
      ok: false,
      refusal: {
        code: "evaluation_limit_reached",
        scope: "address",
        limit: 1,
        retryAfterSeconds: 50_400,
      },
    });
    assert.equal(
      (await evaluation.issue({ ...(await solved()), clientAddress: "2001:db8:1:3::1" })).ok,
      true,
    );
    // A new UTC day, a new count.
    clock.now = Date.parse("2026-11-22T00:00:00Z");
    assert.equal(
      (await evaluation.issue({ ...(await solved()), clientAddress: "2001:db8:1:2::1" })).ok,
      true,
    );
  });

  test("addresses the service cannot read share one counter", async () => {
    const { evaluation, solved } = issuer({ terms: { perDay: 100 } });
    assert.equal(evaluation.addressBucket(undefined), `${ADDRESS_BUCKET_PREFIX}unknown`);
    assert.equal(evaluation.addressBucket("not an ip"), `${ADDRESS_BUCKET_PREFIX}unknown`);
    assert.equal(
      (await evaluation.issue({ ...(await solved()), clientAddress: undefined })).ok,
      true,
    );
    const second = await evaluation.issue({ ...(await solved()), clientAddress: "garbage" });
    assert.equal(!second.ok && second.refusal.code, "evaluation_limit_reached");
  });

  test("the overall limit refuses past perDay and gives the address its count back", async () => {
    const { evaluation, solved, caps } = issuer({ terms: { perDay: 2 } });
    for (const address of ["192.0.2.1", "192.0.2.2"]) {
      assert.equal(
        (await evaluation.issue({ ...(await solved()), clientAddress: address })).ok,
        true,
      );
    }
    const third = await evaluation.issue({ ...(await solved()), clientAddress: "192.0.2.3" });
    assert.deepEqual(third, {
      ok: false,
      refusal: {
        code: "evaluation_keys_exhausted",
        scope: "overall",
        limit: 2,
        retryAfterSeconds: 50_400,
      },
    });
    // The refused address was given its count back: it holds nothing today.
    const bucket = evaluation.addressBucket("192.0.2.3");
    assert.equal((await caps.consume(bucket, 1, T0)).allowed, true);
    assert.equal((await caps.consume(ISSUANCE_BUCKET, 2, T0)).allowed, false);
  });

  test("a network (IPv4 /24, IPv6 /48) has a limit of its own, behind each address's", async () => {
    const { evaluation, solved, caps } = issuer({
      terms: { perAddressDaily: 2, perNetworkDaily: 3, perDay: 100 },
    });
    const issue = async (clientAddress: string) =>
      evaluation.issue({ ...(await solved()), clientAddress });
    for (const address of ["192.0.2.1", "192.0.2.1", "192.0.2.200"]) {
      assert.equal((await issue(address)).ok, true, address);
    }
    const sameSite = await issue("192.0.2.77");
    assert.deepEqual(sameSite, {
      ok: false,
      refusal: {
        code: "evaluation_limit_reached",
        scope: "network",
        limit: 3,
        retryAfterSeconds: 50_400,
      },
    });
    // The refused address got its own count back; another /24 is another network.
    assert.equal(await caps.count(evaluation.addressBucket("192.0.2.77"), T0), 0);
    assert.equal((await issue("192.0.3.1")).ok, true);
    // IPv6: one /48, whatever /64 inside it.
    for (const address of ["2001:db8:7:1::1", "2001:db8:7:2::1", "2001:db8:7:3::1"]) {
      assert.equal((await issue(address)).ok, true, address);
    }
    const sixth = await issue("2001:db8:7:ffff::1");
    assert.equal(!sixth.ok && "scope" in sixth.refusal && sixth.refusal.scope, "network");
    assert.equal((await issue("2001:db8:8::1")).ok, true);
  });

  test("the difficulty rises as the day's issuance fills, and the challenge states it", async () => {
    assert.deepEqual(
      [0, 1, 24, 25, 100, 199, 200, 500].map((issued) =>
        difficultyAfter(issued, { ...TERMS, perDay: 200, powBits: 16, powRampBits: 8 }),
      ),
      [16, 16, 16, 17, 20, 23, 24, 24],
    );
    assert.equal(difficultyAfter(200, { ...TERMS, perDay: 200, powBits: 30, powRampBits: 8 }), 32);
    const { evaluation, solved, clock } = issuer({
      terms: { perAddressDaily: 1, perNetworkDaily: 100, perDay: 4, powBits: 2, powRampBits: 4 },
    });
    // Taken while the day is fresh, spent once it is nearly full.
    const early = await solved();
    const seen: number[] = [];
    for (let index = 0; index < 3; index += 1) {
      const challenge = await evaluation.challenge();
      seen.push(challenge.difficulty);
      assert.equal(parseChallenge(challenge.challenge)?.difficulty, challenge.difficulty);
      const nonce = solveProofOfWork(nodeSha256, challenge.challenge, challenge.difficulty) ?? "";
      const outcome = await evaluation.issue({
        challenge: challenge.challenge,
        nonce,
        clientAddress: `198.51.${index}.1`,
      });
      assert.equal(outcome.ok, true);
    }
    assert.deepEqual(seen, [2, 3, 4]);
    assert.equal(await evaluation.currentDifficulty(), 5);
    // A challenge is honoured at the difficulty it states, however many keys came after it.
    assert.equal(parseChallenge(early.challenge)?.difficulty, 2);
    assert.equal((await evaluation.issue({ ...early, clientAddress: "203.0.113.1" })).ok, true);
    // A new UTC day starts at the base difficulty again.
    clock.now = Date.parse("2026-11-22T09:00:00Z");
    assert.equal((await evaluation.challenge()).difficulty, 2);
  });

  test("a cap store that cannot be read gives the ramp's top difficulty, not an error", async () => {
    const { evaluation, caps } = issuer({ terms: { powBits: 3, powRampBits: 5 } });
    caps.count = async () => {
      throw new Error("connection refused");
    };
    assert.equal((await evaluation.challenge()).difficulty, 8);
  });

  test("a key store that fails gives both counts back; the error reaches the caller", async () => {
    const failing: DocumentStore = {
      get: async () => null,
      create: async () => {
        throw new DocumentStoreUnavailableError("down");
      },
      replace: async () => false,
      delete: async () => false,
      list: async () => [],
      close: async () => {},
    };
    const { evaluation, solved, caps } = issuer({ store: failing });
    await assert.rejects(
      evaluation.issue({ ...(await solved()), clientAddress: "192.0.2.1" }),
      DocumentStoreUnavailableError,
    );
    assert.equal((await caps.consume(evaluation.addressBucket("192.0.2.1"), 1, T0)).allowed, true);
    assert.equal((await caps.consume(ISSUANCE_BUCKET, 1, T0)).allowed, true);
  });

  test("a ledger that cannot answer is ChallengeLedgerUnavailableError, nothing counted", async () => {
    const { evaluation, solved, ledger, caps } = issuer();
    ledger.spend = async () => {
      throw new Error("connection refused");
    };
    await assert.rejects(
      evaluation.issue({ ...(await solved()), clientAddress: "192.0.2.1" }),
      ChallengeLedgerUnavailableError,
    );
    assert.equal(caps.size, 0);
  });
});
