/**
 * The behaviour every `DocumentStore` must have (architecture.md: one contract suite, run
 * against each implementation). An implementation's test file calls
 * `documentStoreContract` with a factory for fresh, empty stores.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  issueNotarization,
  parseNotarizationRequest,
  readNotarization,
  storeNotarization,
} from "../../src/notarization/index.js";
import type { DocumentStore } from "../../src/storage/document-store.js";
import { signerFromSeed } from "../../src/verifier/crypto/ed25519.js";

export interface StoreFixture {
  store: DocumentStore;
  /** Closes the store and removes whatever the fixture created. */
  dispose(): Promise<void>;
}

const bytes = (text: string) => new TextEncoder().encode(text);
const text = (value: Uint8Array | null) =>
  value === null ? null : new TextDecoder().decode(value);

export function documentStoreContract(name: string, open: () => Promise<StoreFixture>): void {
  describe(`DocumentStore contract: ${name}`, () => {
    let fixture: StoreFixture;
    let store: DocumentStore;
    before(async () => {
      fixture = await open();
      store = fixture.store;
    });
    after(() => fixture.dispose());

    test("get of an absent document is null", async () => {
      assert.equal(await store.get("anchors", "sha256:absent"), null);
    });

    test("create stores once; a second create returns the first bytes untouched", async () => {
      const first = await store.create("settlements", "0xabc", bytes('{"n":1}'));
      assert.deepEqual(
        { created: first.created, stored: text(first.stored) },
        {
          created: true,
          stored: '{"n":1}',
        },
      );
      const second = await store.create("settlements", "0xabc", bytes('{"n":2}'));
      assert.deepEqual(
        { created: second.created, stored: text(second.stored) },
        {
          created: false,
          stored: '{"n":1}',
        },
      );
      assert.equal(text(await store.get("settlements", "0xabc")), '{"n":1}');
    });

    test("concurrent creates of one id: exactly one wins and all see its bytes", async () => {
      const results = await Promise.all(
        Array.from({ length: 16 }, (_, index) =>
          store.create("settlements", "0xrace", bytes(`{"writer":${index}}`)),
        ),
      );
      const winners = results.filter((result) => result.created);
      assert.equal(winners.length, 1);
      const stored = text(await store.get("settlements", "0xrace"));
      for (const result of results) assert.equal(text(result.stored), stored);
    });

    test("replace is compare-and-set", async () => {
      assert.equal(await store.replace("anchors", "sha256:cas", null, bytes("v1")), true);
      assert.equal(await store.replace("anchors", "sha256:cas", null, bytes("v1b")), false);
      assert.equal(await store.replace("anchors", "sha256:cas", bytes("nope"), bytes("v2")), false);
      assert.equal(await store.replace("anchors", "sha256:cas", bytes("v1"), bytes("v2")), true);
      assert.equal(text(await store.get("anchors", "sha256:cas")), "v2");
      assert.equal(await store.replace("anchors", "sha256:gone", bytes("v1"), bytes("v2")), false);
    });

    test("concurrent replaces from the same version: exactly one wins", async () => {
      await store.create("revocations", "did:key:race", bytes("base"));
      const outcomes = await Promise.all(
        Array.from({ length: 8 }, (_, index) =>
          store.replace("revocations", "did:key:race", bytes("base"), bytes(`next-${index}`)),
        ),
      );
      assert.equal(outcomes.filter(Boolean).length, 1);
      assert.match(text(await store.get("revocations", "did:key:race")) ?? "", /^next-\d$/);
    });

    test("ids are opaque: separators, dots and percent signs do not collide or escape", async () => {
      const ids = ["a/b", "a%2Fb", "..", ".", "a.b", "a:b", "é", "did:key:z6Mk", "x".repeat(200)];
      for (const id of ids) await store.create("crystals", id, bytes(JSON.stringify(id)));
      for (const id of ids) assert.equal(text(await store.get("crystals", id)), JSON.stringify(id));
      assert.deepEqual(await store.list("crystals"), [...ids].sort());
    });

    test("collections are separate namespaces", async () => {
      await store.create("keys", "shared-id", bytes("key"));
      await store.create("tenants", "shared-id", bytes("tenant"));
      assert.equal(text(await store.get("keys", "shared-id")), "key");
      assert.equal(text(await store.get("tenants", "shared-id")), "tenant");
      await store.create("notarizations", "shared-id", bytes("notarization"));
      assert.equal(text(await store.get("notarizations", "shared-id")), "notarization");
    });

    test("notarizations: one document per statement digest, kept by the first write", async () => {
      const signer = signerFromSeed(new Uint8Array(32).fill(5));
      const issued = issueNotarization(
        parseNotarizationRequest(new Map([["prompt_hash", "AB".repeat(32)]])),
        signer,
        { now: () => new Date("2026-11-26T12:00:00Z") },
      );
      const first = await storeNotarization(store, issued, "svc", new Date("2026-11-26T12:00:00Z"));
      const retry = await storeNotarization(store, issued, "svc", new Date("2026-11-26T12:00:09Z"));
      assert.deepEqual([first.created, retry.created], [true, false]);
      assert.equal(text(retry.stored), text(first.stored));
      assert.deepEqual(await store.list("notarizations", "sha256:"), [issued.digest]);
      const hex = issued.digest.slice("sha256:".length);
      assert.equal(text(await readNotarization(store, hex.toUpperCase())), text(first.stored));
      await assert.rejects(readNotarization(store, "ff".repeat(32)), {
        code: "notarization_not_found",
      });
    });

    test("list filters by prefix and sorts by code point", async () => {
      for (const id of ["t1/b", "t1/a", "t2/a", "t1/\u{1F600}", "t1/\uFFFD"]) {
        await store.create("tenants", id, bytes("{}"));
      }
      assert.deepEqual(await store.list("tenants", "t1/"), [
        "t1/a",
        "t1/b",
        "t1/\uFFFD",
        "t1/\u{1F600}",
      ]);
      assert.deepEqual(await store.list("anchors", "no-such-prefix"), []);
    });

    test("delete removes once; the id can then be created again", async () => {
      await store.create("crystals", "gone/a", bytes("first"));
      await store.create("crystals", "gone/b", bytes("kept"));
      assert.equal(await store.delete("crystals", "gone/a"), true);
      assert.equal(await store.get("crystals", "gone/a"), null);
      assert.equal(await store.delete("crystals", "gone/a"), false);
      assert.equal(await store.delete("crystals", "never-stored"), false);
      assert.deepEqual(await store.list("crystals", "gone/"), ["gone/b"]);
      assert.equal((await store.create("crystals", "gone/a", bytes("second"))).created, true);
      assert.equal(text(await store.get("crystals", "gone/a")), "second");
      assert.equal(await store.replace("crystals", "gone/b", bytes("kept"), bytes("new")), true);
      assert.equal(await store.delete("crystals", "gone/b"), true);
      assert.equal(await store.replace("crystals", "gone/b", bytes("new"), bytes("x")), false);
    });
  });
}
