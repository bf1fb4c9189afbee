/** Crystal storage over the embedded document store: ownership races and crash repair. */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { keyPrincipal } from "../../src/access/principal.js";
import { sealCrystal, tenantHashOf } from "../../src/crystals/client.js";
import {
  crystalDocumentId,
  type PreparedCrystal,
  readLineageSummaries,
  storeCrystal,
} from "../../src/crystals/store.js";
import { prepareCrystalPost } from "../../src/service/crystals-request.js";
import { FsDocumentStore } from "../../src/storage/fs-document-store.js";

const KEY = randomBytes(32);
const ALICE = keyPrincipal("a11ce000");
const BOB = keyPrincipal("b0b00000");

function prepared(tenantHash: string, parentCrystalId: string | null = null): PreparedCrystal {
  const envelope = sealCrystal({
    plaintext: randomBytes(64),
    key: KEY,
    tenantHash,
    parentCrystalId,
  });
  const answer = prepareCrystalPost(Buffer.from(JSON.stringify(envelope)), {
    maxCiphertextBytes: 1 << 21,
  });
  assert.equal(answer.kind, "store");
  return answer as PreparedCrystal;
}

describe("storeCrystal", () => {
  let dir: string;
  let store: FsDocumentStore;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "receiptd-crystal-store-"));
    store = new FsDocumentStore(dir);
  });
  after(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  test("two principals racing for a new tenant: exactly one owns it", async () => {
    for (let round = 0; round < 5; round += 1) {
      const tenant = tenantHashOf(`race ${round}`);
      const outcomes = await Promise.all([
        storeCrystal(store, ALICE, prepared(tenant)),
        storeCrystal(store, BOB, prepared(tenant)),
      ]);
      assert.deepEqual([...outcomes].sort(), ["created", "tenant_forbidden"]);
    }
  });

  test("the same crystal posted twice at once: one created, one unchanged", async () => {
    const crystal = prepared(tenantHashOf("twice"));
    const outcomes = await Promise.all([
      storeCrystal(store, ALICE, crystal),
      storeCrystal(store, ALICE, crystal),
    ]);
    assert.deepEqual([...outcomes].sort(), ["created", "unchanged"]);
  });

  test("an envelope stored without its summary (a crash) is listed after a re-post", async () => {
    const tenant = tenantHashOf("crash");
    const root = prepared(tenant);
    assert.equal(await storeCrystal(store, ALICE, root), "created");
    const child = prepared(tenant, root.crystalId);
    // What a crash between the two writes leaves: the envelope without its summary.
    await store.create("crystals", crystalDocumentId(tenant, child.crystalId), child.envelope);
    assert.equal((await readLineageSummaries(store, tenant)).length, 1);
    assert.equal(await storeCrystal(store, ALICE, child), "unchanged");
    assert.equal((await readLineageSummaries(store, tenant)).length, 2);
  });
});
