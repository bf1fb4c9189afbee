/** The service's Ed25519 key (service.md §8): created once with mode 0600, then reused. */
import assert from "node:assert/strict";
import { mkdir, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { buildApp } from "../../src/service/app.js";
import {
  generateServiceKeyPem,
  KEY_REFRESH_MS,
  loadOrCreateServiceKey,
  SERVICE_KEY_FILE,
  ServiceIdentity,
  ServiceKeyError,
} from "../../src/service/service-key.js";
import { replaceFile } from "../../src/storage/atomic-file.js";
import { temporaryDataDir, testConfig } from "./support/service.js";

async function issuerOf(dataDir: string): Promise<string> {
  const app = await buildApp(testConfig(dataDir));
  try {
    const response = await app.inject({ method: "GET", url: "/info" });
    return response.json<{ issuer: string }>().issuer;
  } finally {
    await app.close();
  }
}

describe("the service key", () => {
  let root: string;
  before(async () => {
    root = await temporaryDataDir();
  });
  after(() => rm(root, { recursive: true, force: true }));

  test("is created 0600 on first start (with the data directory) and reused by the next app", async () => {
    const dataDir = join(root, "fresh", "data");
    const first = await issuerOf(dataDir);
    const keyPath = join(dataDir, SERVICE_KEY_FILE);
    assert.equal((await stat(keyPath)).mode & 0o777, 0o600);
    const pem = await readFile(keyPath, "utf8");
    assert.match(pem, /^-----BEGIN PRIVATE KEY-----\n/);

    const second = await issuerOf(dataDir);
    assert.equal(second, first);
    assert.equal(await readFile(keyPath, "utf8"), pem);
    const left = await readdir(dataDir);
    assert.ok(left.includes(SERVICE_KEY_FILE));
    assert.deepEqual(
      left.filter((name) => name.endsWith(".tmp")),
      [],
      "no temporary file is left",
    );
  });

  test("concurrent first starts agree on one key", async () => {
    const dataDir = join(root, "race");
    const signers = await Promise.all(
      Array.from({ length: 8 }, () => loadOrCreateServiceKey(dataDir)),
    );
    assert.equal(new Set(signers.map((signer) => signer.did)).size, 1);
    assert.deepEqual(await readdir(dataDir), [SERVICE_KEY_FILE]);
  });

  test("a key file that is not an Ed25519 private key is refused, not replaced", async () => {
    const dataDir = join(root, "corrupt");
    await mkdir(dataDir);
    await writeFile(join(dataDir, SERVICE_KEY_FILE), "not a key\n", { mode: 0o600 });
    await assert.rejects(loadOrCreateServiceKey(dataDir), ServiceKeyError);
    assert.equal(await readFile(join(dataDir, SERVICE_KEY_FILE), "utf8"), "not a key\n");
  });
});

describe("ServiceIdentity", () => {
  test("follows a replaced key file after the refresh interval, not before", async () => {
    const dataDir = await temporaryDataDir();
    try {
      const first = await loadOrCreateServiceKey(dataDir);
      const clock = { now: 0 };
      const identity = ServiceIdentity.open(dataDir, () => clock.now);
      assert.equal(identity.signer().did, first.did);

      await replaceFile(join(dataDir, SERVICE_KEY_FILE), generateServiceKeyPem());
      clock.now += KEY_REFRESH_MS - 1;
      assert.equal(identity.signer().did, first.did);
      clock.now += 1;
      const second = identity.signer().did;
      assert.notEqual(second, first.did);
      assert.match(second, /^did:key:z6Mk/);
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  test("keeps signing with the key it has while the file is unreadable", async () => {
    const dataDir = await temporaryDataDir();
    try {
      const first = await loadOrCreateServiceKey(dataDir);
      const clock = { now: 0 };
      const identity = ServiceIdentity.open(dataDir, () => clock.now);
      await writeFile(join(dataDir, SERVICE_KEY_FILE), "not a key");
      clock.now += KEY_REFRESH_MS;
      assert.equal(identity.signer().did, first.did);
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
