/** Service signing-key rotation (service.md §8): `rotateServiceKey` and `receiptd rotate-key`. */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdir, readdir, readFile, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { setTimeout as delay } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { RevocationStoreError, readRevocationDocument } from "../../src/revocations/documents.js";
import {
  KeyRotationError,
  RETIRED_KEYS_DIR,
  ROTATION_REASON,
  rotateServiceKey,
} from "../../src/service/key-rotation.js";
import {
  generateServiceKeyPem,
  KEY_REFRESH_MS,
  loadOrCreateServiceKey,
  SERVICE_KEY_FILE,
  signerFromPem,
} from "../../src/service/service-key.js";
import { createFileOnce, replaceFile } from "../../src/storage/atomic-file.js";
import { FsDocumentStore } from "../../src/storage/fs-document-store.js";
import { verifyBundle } from "../../src/verifier/bundle/verify-bundle.js";
import type { Ed25519Signer } from "../../src/verifier/crypto/ed25519.js";
import { dumpCompact } from "../../src/verifier/json/dump.js";
import { parseJson } from "../../src/verifier/json/parse.js";
import {
  isObject,
  type JsonObject,
  type JsonValue,
  member,
} from "../../src/verifier/json/value.js";
import {
  buildRevocationDocument,
  parseRevocationDocument,
  signRevocationStatement,
} from "../../src/verifier/revocations/document.js";
import { verifyStatements } from "../../src/verifier/revocations/statements.js";
import {
  issueVerificationReceipt,
  verifyVerificationReceipt,
} from "../../src/verifier/verification-receipt/index.js";
import { corpusBytes } from "../support/corpus.js";
import { startTestService, type TestService, temporaryDataDir } from "./support/service.js";

const RECEIPTD = fileURLToPath(new URL("../../src/cli/receiptd.ts", import.meta.url));
const BUNDLE = corpusBytes("vectors/01_happy_minimal.json");

/** A clock that only moves when the rotation sleeps, so the test decides what time it is. */
function fakeClock(startIso: string) {
  let now = Date.parse(startIso);
  const slept: number[] = [];
  return {
    slept,
    now: () => now,
    sleep: async (ms: number) => {
      slept.push(ms);
      now += ms;
    },
  };
}

function keyFile(dataDir: string): string {
  return join(dataDir, SERVICE_KEY_FILE);
}

async function currentSigner(dataDir: string): Promise<Ed25519Signer> {
  return signerFromPem(await readFile(keyFile(dataDir), "utf8"), keyFile(dataDir));
}

/** Keeps `pem` in `retired-keys/` the way the first step of a rotation does. */
async function keepRetiredKey(dataDir: string, did: string, pem: Uint8Array): Promise<void> {
  await mkdir(join(dataDir, RETIRED_KEYS_DIR), { recursive: true });
  assert.ok(await createFileOnce(join(dataDir, RETIRED_KEYS_DIR, `${did.slice(8)}.pem`), pem));
}

async function retiredKeyFiles(dataDir: string): Promise<string[]> {
  return readdir(join(dataDir, RETIRED_KEYS_DIR)).catch(() => []);
}

/** What `rotate-key` leaves behind if it stops between switching keys and publishing. */
async function interruptAfterSwitch(dataDir: string): Promise<Ed25519Signer> {
  const oldPem = await readFile(keyFile(dataDir));
  const old = signerFromPem(oldPem.toString("utf8"), keyFile(dataDir));
  await keepRetiredKey(dataDir, old.did, oldPem);
  await replaceFile(keyFile(dataDir), generateServiceKeyPem());
  return old;
}

async function storedStatements(store: FsDocumentStore, issuer: string): Promise<JsonValue[]> {
  const read = await readRevocationDocument(store, issuer);
  assert.equal(read.status, "found", `a valid document for ${issuer}`);
  return read.status === "found" ? parseRevocationDocument(read.bytes) : [];
}

function only(statements: JsonValue[]): JsonObject {
  assert.equal(statements.length, 1);
  const [statement] = statements;
  assert.ok(isObject(statement));
  return statement;
}

describe("rotateServiceKey", () => {
  let dataDir: string;
  let store: FsDocumentStore;
  before(async () => {
    dataDir = await temporaryDataDir();
  });
  after(() => rm(dataDir, { recursive: true, force: true }));

  async function freshDataDir(): Promise<void> {
    await rm(dataDir, { recursive: true, force: true });
    await loadOrCreateServiceKey(dataDir);
    store = new FsDocumentStore(dataDir);
  }

  test("keeps the old key, switches, waits, then dates and publishes the retirement", async () => {
    await freshDataDir();
    const old = await currentSigner(dataDir);
    const clock = fakeClock("2030-01-01T00:00:00.900Z");
    const observed: string[] = [];
    const result = await rotateServiceKey(dataDir, store, {
      now: clock.now,
      sleep: async (ms) => {
        // While waiting: the new key is in place, the old one is kept, nothing is published.
        observed.push((await currentSigner(dataDir)).did);
        assert.deepEqual(await retiredKeyFiles(dataDir), [`${old.did.slice(8)}.pem`]);
        assert.equal(await store.get("revocations", old.did), null);
        await clock.sleep(ms);
      },
    });

    assert.notEqual(result.issuer, old.did);
    assert.deepEqual(observed, [result.issuer]);
    assert.ok(clock.slept.reduce((sum, ms) => sum + ms, 0) > KEY_REFRESH_MS + 1000);
    // 00:00:00.900 + more than 2 s: the first whole second after every old signature.
    assert.deepEqual(result.retired, {
      issuer: old.did,
      revokedAt: "2030-01-01T00:00:03Z",
      published: true,
    });
    assert.deepEqual(result.resumed, []);
    assert.equal((await currentSigner(dataDir)).did, result.issuer);
    assert.deepEqual(await retiredKeyFiles(dataDir), []);

    const statement = only(await storedStatements(store, old.did));
    assert.equal(member(statement, "key"), old.did);
    assert.equal(member(statement, "revoked_at"), "2030-01-01T00:00:03Z");
    assert.equal(member(statement, "reason"), ROTATION_REASON);
    assert.equal(verifyStatements([statement]).revoked.length, 1);
    assert.equal((await stat(keyFile(dataDir))).mode & 0o777, 0o600);
  });

  test("finishes a rotation interrupted after the switch, then rotates the current key", async () => {
    await freshDataDir();
    const first = await interruptAfterSwitch(dataDir);
    const second = await currentSigner(dataDir);
    const result = await rotateServiceKey(dataDir, store, fakeClock("2030-02-01T00:00:00Z"));

    assert.deepEqual(result.resumed, [
      { issuer: first.did, revokedAt: "2030-02-01T00:00:02Z", published: true },
    ]);
    assert.equal(result.retired.issuer, second.did);
    assert.equal((await currentSigner(dataDir)).did, result.issuer);
    assert.equal(member(only(await storedStatements(store, first.did)), "key"), first.did);
    assert.equal(member(only(await storedStatements(store, second.did)), "key"), second.did);
    assert.deepEqual(await retiredKeyFiles(dataDir), []);
  });

  test("a rotation interrupted before the switch is performed once, not twice", async () => {
    await freshDataDir();
    const old = await currentSigner(dataDir);
    const pem = await readFile(keyFile(dataDir));
    await keepRetiredKey(dataDir, old.did, pem);

    const result = await rotateServiceKey(dataDir, store, fakeClock("2030-03-01T00:00:00Z"));
    assert.deepEqual(result.resumed, []);
    assert.equal(result.retired.issuer, old.did);
    assert.equal(only(await storedStatements(store, old.did)).size, 4);
    assert.deepEqual(await retiredKeyFiles(dataDir), []);
  });

  test("a retirement already published is not published again", async () => {
    await freshDataDir();
    const first = await interruptAfterSwitch(dataDir);
    // The interrupted run got as far as publishing, not as far as deleting the kept key.
    const earlier = signRevocationStatement(first, {
      revokedAt: "2030-04-01T00:00:00Z",
      reason: ROTATION_REASON,
    });
    const published = Buffer.from(dumpCompact(buildRevocationDocument([earlier])));
    assert.ok(await store.replace("revocations", first.did, null, published));

    const result = await rotateServiceKey(dataDir, store, fakeClock("2030-04-01T00:05:00Z"));
    assert.deepEqual(result.resumed, [
      { issuer: first.did, revokedAt: "2030-04-01T00:00:00Z", published: false },
    ]);
    assert.deepEqual(await store.get("revocations", first.did), published);
    assert.deepEqual(await retiredKeyFiles(dataDir), []);
  });

  test("when the retirement cannot be published the old key is kept for the next run", async () => {
    await freshDataDir();
    const old = await currentSigner(dataDir);
    const corrupt = Buffer.from("{");
    assert.ok(await store.replace("revocations", old.did, null, corrupt));

    await assert.rejects(
      rotateServiceKey(dataDir, store, fakeClock("2030-05-01T00:00:00Z")),
      RevocationStoreError,
    );
    assert.deepEqual(await store.get("revocations", old.did), corrupt);
    assert.deepEqual(await retiredKeyFiles(dataDir), [`${old.did.slice(8)}.pem`]);
    const switched = await currentSigner(dataDir);
    assert.notEqual(switched.did, old.did);

    // The operator repairs the document; the next run finishes the old key's retirement.
    const empty = Buffer.from(dumpCompact(buildRevocationDocument([])));
    assert.ok(await store.replace("revocations", old.did, corrupt, empty));
    const result = await rotateServiceKey(dataDir, store, fakeClock("2030-05-01T01:00:00Z"));
    assert.deepEqual(result.resumed, [
      { issuer: old.did, revokedAt: "2030-05-01T01:00:02Z", published: true },
    ]);
    assert.equal(result.retired.issuer, switched.did);
    assert.equal(member(only(await storedStatements(store, old.did)), "key"), old.did);
  });

  test("refuses a data directory without a key", async () => {
    await rm(dataDir, { recursive: true, force: true });
    await assert.rejects(
      rotateServiceKey(dataDir, new FsDocumentStore(dataDir), fakeClock("2030-06-01T00:00:00Z")),
      (error) => error instanceof KeyRotationError && /nothing to rotate/.test(error.message),
    );
  });
});

describe("rotation while the service runs (real HTTP)", () => {
  let service: TestService;
  let base: string;
  before(async () => {
    service = await startTestService();
    base = await service.app.listen({ port: 0, host: "127.0.0.1" });
  });
  after(() => service.close());

  async function info(): Promise<{ issuer: string }> {
    return (await fetch(`${base}/info`)).json() as Promise<{ issuer: string }>;
  }

  async function receiptFromService(): Promise<JsonObject> {
    const response = await fetch(`${base}/verify?receipt=1`, {
      method: "POST",
      body: BUNDLE,
      headers: service.authHeaders,
    });
    assert.equal(response.status, 200);
    const payload = parseJson(Buffer.from(await response.arrayBuffer()));
    assert.ok(isObject(payload));
    const receipt = member(payload, "verification_receipt");
    assert.ok(isObject(receipt));
    return receipt;
  }

  test("old receipts stay valid against the published retirement", {
    timeout: 60_000,
  }, async () => {
    const dataDir = service.config.dataDir;
    const oldPem = await readFile(keyFile(dataDir), "utf8");
    const oldReceipt = await receiptFromService();
    const oldIssuer = (await info()).issuer;
    assert.equal(member(oldReceipt, "issuer"), oldIssuer);

    // As the CLI does it: its own store over the same data directory, the real clock.
    const result = await rotateServiceKey(dataDir, new FsDocumentStore(dataDir));
    assert.equal(result.retired.issuer, oldIssuer);
    assert.notEqual(result.issuer, oldIssuer);

    // The server switches within its refresh interval, which the rotation has waited out.
    let seen = (await info()).issuer;
    for (let attempt = 0; seen !== result.issuer && attempt < 50; attempt += 1) {
      await delay(100);
      seen = (await info()).issuer;
    }
    assert.equal(seen, result.issuer);

    const newReceipt = await receiptFromService();
    assert.equal(member(newReceipt, "issuer"), result.issuer);
    assert.equal(verifyVerificationReceipt(newReceipt, { bundle: BUNDLE }).valid, true);

    const served = await fetch(`${base}/revocations/${oldIssuer}`);
    assert.equal(served.status, 200);
    const statements = parseRevocationDocument(Buffer.from(await served.arrayBuffer()));
    const statement = only(statements);
    assert.equal(member(statement, "key"), oldIssuer);
    assert.equal(member(statement, "revoked_at"), result.retired.revokedAt);
    const sig = member(statement, "sig");
    assert.ok(isObject(sig));
    assert.equal(member(sig, "key"), oldIssuer);
    assert.deepEqual(verifyStatements(statements).errors, []);

    // The receipt signed before the rotation: valid, not revoked, and dated before it.
    const oldCheck = verifyVerificationReceipt(oldReceipt, {
      bundle: BUNDLE,
      revocations: statements,
    });
    assert.deepEqual(oldCheck.errors, []);
    assert.equal(oldCheck.valid, true);
    assert.equal(oldCheck.digest_match, true);
    assert.ok(String(member(oldReceipt, "verified_at")) < result.retired.revokedAt);

    // The document does revoke: the old key's signature dated at the revocation is refused.
    const bundle = parseJson(BUNDLE);
    assert.ok(isObject(bundle));
    const late = issueVerificationReceipt(bundle, verifyBundle(bundle), signerFromPem(oldPem, ""), {
      verifiedAt: result.retired.revokedAt,
    });
    const lateCheck = verifyVerificationReceipt(late, { revocations: statements });
    assert.deepEqual(lateCheck.errors, ["key_revoked"]);
    // The new issuer's receipts are untouched by the old issuer's document.
    assert.equal(verifyVerificationReceipt(newReceipt, { revocations: statements }).valid, true);

    assert.equal((await fetch(`${base}/revocations/${result.issuer}`)).status, 404);
    assert.deepEqual(await retiredKeyFiles(dataDir), []);
  });
});

describe("receiptd rotate-key", () => {
  let dataDir: string;
  before(async () => {
    dataDir = await temporaryDataDir();
  });
  after(() => rm(dataDir, { recursive: true, force: true }));

  test("rotates the key of DATA_DIR and prints both issuers", { timeout: 60_000 }, async () => {
    const old = await loadOrCreateServiceKey(dataDir);
    const run = spawnSync(process.execPath, ["--import", "tsx", RECEIPTD, "rotate-key"], {
      encoding: "utf8",
      env: { ...process.env, DATA_DIR: dataDir },
    });
    assert.equal(run.stderr, "");
    assert.equal(run.status, 0);
    const current = await currentSigner(dataDir);
    assert.equal(
      run.stdout,
      `old issuer: ${old.did} (revoked at ${String(
        member(only(await storedStatements(new FsDocumentStore(dataDir), old.did)), "revoked_at"),
      )})\nnew issuer: ${current.did}\n`,
    );
    assert.notEqual(current.did, old.did);
  });

  test("takes no arguments", () => {
    const run = spawnSync(process.execPath, ["--import", "tsx", RECEIPTD, "rotate-key", "now"], {
      encoding: "utf8",
      env: { ...process.env, DATA_DIR: dataDir },
    });
    assert.equal(run.status, 2);
    assert.match(run.stderr, /usage: receiptd rotate-key/);
  });
});
