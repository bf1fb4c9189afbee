/**
 * Memory crystals over HTTP (service.md §6): `POST /crystals`, `GET /crystals/{crystal_id}`,
 * `GET /crystals/lineage`, and `/info`'s crystals section.
 *
 * Principals: requests carry real API keys, which the access plugin turns into the principals
 * `key:<id>`; two keys are two principals for the tenant rules.
 */
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { Validator } from "@seriousme/openapi-schema-validator";
import { KeyStore } from "../../../../src/access/api-keys.js";
import { keyPrincipal } from "../../../../src/access/principal.js";
import {
  type CrystalEnvelope,
  openCrystal,
  type SealOptions,
  sealCrystal,
  tenantHashOf,
} from "../../../../src/crystals/client.js";
import { CRYSTAL_CIPHERS } from "../../../../src/crystals/envelope.js";
import { expireCrystals } from "../../../../src/crystals/expiry.js";
import {
  PythonBase64Error,
  pythonUrlsafeB64decode,
  pythonUrlsafeB64encode,
} from "../../../support/python-base64.js";
import { startTestService, type TestService } from "../../support/service.js";

const JSON_TYPE = "application/json; charset=utf-8";
const MIB = 1024 * 1024;

interface Caller {
  key: string;
  principal: string;
}

type Envelope = Record<string, unknown>;

let tenantCount = 0;
/** A tenant no other test writes to. */
function freshTenant(): string {
  tenantCount += 1;
  return tenantHashOf(`crystals test tenant ${tenantCount} ${randomBytes(8).toString("hex")}`);
}

const KEY = randomBytes(32);

function seal(tenantHash: string, options: Partial<SealOptions> = {}): CrystalEnvelope {
  return sealCrystal({
    plaintext: Buffer.from(`state of ${tenantHash} ${randomBytes(4).toString("hex")}`),
    key: KEY,
    tenantHash,
    createdAt: "2030-01-01T00:00:00Z",
    ...options,
  });
}

/** The envelope as the reference's Python clients send it: `urlsafe_b64encode`, padded. */
function pythonSpelling(envelope: CrystalEnvelope): CrystalEnvelope {
  return {
    ...envelope,
    nonce: pythonUrlsafeB64encode(Buffer.from(envelope.nonce, "base64url")),
    ciphertext: pythonUrlsafeB64encode(Buffer.from(envelope.ciphertext, "base64url")),
  };
}

const sha256Id = (bytes: Uint8Array) =>
  `sha256:${createHash("sha256").update(bytes).digest("hex")}`;

/** Header values that differ between any two requests and say nothing about the resource. */
const PER_REQUEST_HEADERS = new Set([
  "x-request-id",
  "date",
  "x-ratelimit-remaining",
  "x-ratelimit-reset",
]);

function stableHeaders(headers: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(headers).filter(([name]) => !PER_REQUEST_HEADERS.has(name)),
  );
}

describe("memory crystals", () => {
  let service: TestService;
  let alice: Caller;
  let bob: Caller;

  before(async () => {
    service = await startTestService({}, { anonymous: true });
    const keys = new KeyStore(service.app.documentStore, { defaultDailyCap: 1000 });
    const caller = async (name: string): Promise<Caller> => {
      const created = await keys.create({ name });
      return { key: created.key, principal: keyPrincipal(created.record.id) };
    };
    alice = await caller("alice");
    bob = await caller("bob");
  });
  after(() => service.close());

  const post = (payload: object | string, who: Caller = alice) =>
    service.app.inject({
      method: "POST",
      url: "/crystals",
      headers: {
        "content-type": "application/json",
        authorization: `Bearer ${who.key}`,
      },
      payload: typeof payload === "string" ? payload : JSON.stringify(payload),
    });
  const get = (url: string, headers: Record<string, string> = {}) =>
    service.app.inject({ method: "GET", url, headers });
  const getCrystal = (id: string, tenant: string, headers: Record<string, string> = {}) =>
    get(`/crystals/${id}?tenant=${tenant}`, headers);
  const lineage = (tenant: string) => get(`/crystals/lineage?tenant=${tenant}`);

  const created = async (envelope: CrystalEnvelope, who: Caller = alice) => {
    const response = await post({ ...envelope }, who);
    assert.equal(response.statusCode, 201, response.body);
    return response;
  };

  describe("round trip: seal → POST → GET → open", () => {
    for (const cipher of CRYSTAL_CIPHERS) {
      test(`${cipher}: the plaintext comes back`, async () => {
        const tenant = freshTenant();
        const plaintext = randomBytes(1000);
        const envelope = sealCrystal({
          plaintext,
          key: KEY,
          tenantHash: tenant,
          cipher,
          metadataPublic: { label: "notes", turn: 3 },
        });
        const response = await created(envelope);
        assert.equal(response.headers["content-type"], JSON_TYPE);
        assert.equal(
          response.headers.location,
          `/crystals/${envelope.crystal_id}?tenant=${tenant}`,
        );
        assert.deepEqual(response.json(), {
          stored: true,
          crystal_id: envelope.crystal_id,
          parent_crystal_id: null,
          tenant_hash: tenant,
          size_bytes: plaintext.length + 16,
        });
        const served = await getCrystal(envelope.crystal_id, tenant);
        assert.equal(served.statusCode, 200, served.body);
        assert.equal(served.headers["content-type"], JSON_TYPE);
        assert.equal(served.headers.etag, `"${envelope.crystal_id}"`);
        assert.equal(served.headers["cache-control"], "private, no-store");
        const fetched = served.json<CrystalEnvelope>();
        assert.deepEqual(fetched, envelope);
        assert.deepEqual(openCrystal(fetched, KEY), plaintext);
      });
    }

    test("over real HTTP, with the tenant in X-Tenant-Hash", async () => {
      const address = await service.app.listen({ port: 0, host: "127.0.0.1" });
      const tenant = freshTenant();
      const plaintext = Buffer.from("over the wire");
      const envelope = sealCrystal({ plaintext, key: KEY, tenantHash: tenant });
      const stored = await fetch(`${address}/crystals`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          authorization: `Bearer ${alice.key}`,
        },
        body: JSON.stringify(envelope),
      });
      assert.equal(stored.status, 201, await stored.text());
      const served = await fetch(`${address}/crystals/${envelope.crystal_id}`, {
        headers: { "x-tenant-hash": tenant },
      });
      assert.equal(served.status, 200);
      assert.deepEqual(openCrystal((await served.json()) as CrystalEnvelope, KEY), plaintext);
    });

    test("the envelope is stored and served in its JCS form, defaults filled in", async () => {
      const tenant = freshTenant();
      const envelope = seal(tenant, { metadataPublic: { z: 1, a: [true, null] } });
      const { cipher: _omitted, ...withoutCipher } = envelope;
      await created(withoutCipher as CrystalEnvelope);
      const served = await getCrystal(envelope.crystal_id, tenant);
      const expected =
        `{"cipher":"chacha20-poly1305","ciphertext":"${envelope.ciphertext}",` +
        `"created_at":"2030-01-01T00:00:00Z","crystal_id":"${envelope.crystal_id}",` +
        `"metadata_public":{"a":[true,null],"z":1},"nonce":"${envelope.nonce}",` +
        `"parent_crystal_id":null,"size_bytes":${envelope.size_bytes},` +
        `"spec":"svc-crystal/1.0","tenant_hash":"${tenant}"}`;
      assert.equal(served.body, expected);
    });

    test("metadata_public may be left out: it is stored as {}", async () => {
      const tenant = freshTenant();
      const { metadata_public: _omitted, ...envelope } = seal(tenant);
      await created(envelope as CrystalEnvelope);
      const served = (await getCrystal(envelope.crystal_id, tenant)).json<CrystalEnvelope>();
      assert.deepEqual(served.metadata_public, {});
    });
  });

  describe("POST /crystals: idempotence, conflicts, parents, owners", () => {
    test("the same envelope again is 200 with the same body, in any member order", async () => {
      const tenant = freshTenant();
      const envelope = seal(tenant);
      const first = await created(envelope);
      const again = await post({ ...envelope });
      assert.equal(again.statusCode, 200, again.body);
      assert.equal(again.body, first.body);
      const reordered = Object.fromEntries(Object.entries(envelope).reverse());
      const third = await post(reordered);
      assert.equal(third.statusCode, 200, third.body);
    });

    test("the same crystal_id with a different envelope is 409 crystal_conflict", async () => {
      const tenant = freshTenant();
      const envelope = seal(tenant);
      await created(envelope);
      const response = await post({ ...envelope, metadata_public: { changed: true } });
      assert.equal(response.statusCode, 409);
      assert.deepEqual(response.json(), { error: "crystal_conflict" });
      const served = (await getCrystal(envelope.crystal_id, tenant)).json<CrystalEnvelope>();
      assert.deepEqual(served.metadata_public, {});
    });

    test("a parent that is not a crystal of this tenant is 422 parent_not_found", async () => {
      const tenant = freshTenant();
      const elsewhere = freshTenant();
      const foreignParent = seal(elsewhere);
      await created(foreignParent);
      for (const parentCrystalId of [
        sha256Id(Buffer.from("never stored")),
        foreignParent.crystal_id,
      ]) {
        const response = await post({ ...seal(tenant, { parentCrystalId }) });
        assert.equal(response.statusCode, 422);
        assert.deepEqual(response.json(), { error: "parent_not_found" });
      }
    });

    test("a refused first write does not claim the tenant", async () => {
      const tenant = freshTenant();
      const orphan = await post(seal(tenant, { parentCrystalId: sha256Id(Buffer.from("x")) }), bob);
      assert.equal(orphan.statusCode, 422);
      await created(seal(tenant), alice);
    });

    test("the first writer owns the tenant: another principal gets 403 tenant_forbidden", async () => {
      const tenant = freshTenant();
      const root = seal(tenant);
      await created(root, alice);
      const child = seal(tenant, { parentCrystalId: root.crystal_id });
      for (const envelope of [
        seal(tenant),
        child,
        root,
        // Ownership is decided first: a stranger learns nothing about parents or ids.
        seal(tenant, { parentCrystalId: sha256Id(Buffer.from("no such parent")) }),
      ]) {
        const response = await post({ ...envelope }, bob);
        assert.equal(response.statusCode, 403, response.body);
        assert.deepEqual(response.json(), { error: "tenant_forbidden" });
      }
      await created(child, alice);
      // Bob owns a tenant of his own, the same ciphertext included.
      const bobs = freshTenant();
      await created(seal(bobs), bob);
      assert.equal((await post(seal(bobs), alice)).statusCode, 403);
    });

    test("413: a ciphertext of 2 MiB + 1 byte; exactly 2 MiB is stored", async () => {
      const tenant = freshTenant();
      const tooLarge = seal(tenant, { plaintext: Buffer.alloc(2 * MIB + 1 - 16, 7) });
      assert.equal(tooLarge.size_bytes, 2 * MIB + 1);
      const refused = await post({ ...tooLarge });
      assert.equal(refused.statusCode, 413);
      assert.equal(refused.headers["content-type"], JSON_TYPE);
      assert.deepEqual(refused.json(), {
        error: "ciphertext_too_large",
        detail: `the decoded ciphertext is ${2 * MIB + 1} bytes`,
        limit: 2 * MIB,
      });
      const largest = seal(tenant, { plaintext: Buffer.alloc(2 * MIB - 16, 7) });
      await created(largest);
      const served = await getCrystal(largest.crystal_id, tenant);
      assert.deepEqual(openCrystal(served.json<CrystalEnvelope>(), KEY).length, 2 * MIB - 16);
    });

    test("writing needs a key, a lease or a day pass: without one it is 401", async () => {
      const response = await service.app.inject({
        method: "POST",
        url: "/crystals",
        payload: JSON.stringify(seal(freshTenant())),
      });
      assert.equal(response.statusCode, 401);
      assert.equal(response.json<{ error: string }>().error, "missing_key");
    });

    test("413: a body over 4 MiB is refused with the crystal body limit", async () => {
      const response = await post(`{"pad":"${"x".repeat(4 * MIB)}"}`);
      assert.equal(response.statusCode, 413);
      assert.deepEqual(response.json(), { error: "body_too_large", limit: 4 * MIB });
    });
  });

  describe("POST /crystals: every envelope rule has its 400", () => {
    const tenant = freshTenant();
    const valid = () => ({ ...seal(tenant) }) as Envelope;
    const shortCiphertext = Buffer.alloc(15, 1);
    const wrongSize = () => {
      const envelope = valid();
      return { ...envelope, size_bytes: (envelope.size_bytes as number) + 1 };
    };
    const cases: [string, () => Envelope | string, string][] = [
      [
        "duplicate members",
        () => '{"spec":"svc-crystal/1.0","spec":"svc-crystal/1.0"}',
        "invalid_json",
      ],
      ["a BOM", () => `\ufeff${JSON.stringify(valid())}`, "invalid_json"],
      ["trailing data", () => `${JSON.stringify(valid())} {}`, "invalid_json"],
      ["an array", () => "[]", "bad_envelope"],
      ["an unknown member", () => ({ ...valid(), owner: "me" }), "unknown_member"],
      [
        "no nonce",
        () => {
          const { nonce: _nonce, ...rest } = valid();
          return rest;
        },
        "missing_member",
      ],
      [
        "no parent_crystal_id (null must be explicit)",
        () => {
          const { parent_crystal_id: _parent, ...rest } = valid();
          return rest;
        },
        "missing_member",
      ],
      ["another spec", () => ({ ...valid(), spec: "svc-crystal/2.0" }), "unsupported_spec"],
      [
        "a crystal_id without the prefix",
        () => {
          const envelope = valid();
          return { ...envelope, crystal_id: (envelope.crystal_id as string).slice(7) };
        },
        "invalid_crystal_id",
      ],
      [
        "an upper-case crystal_id",
        () => {
          const envelope = valid();
          return { ...envelope, crystal_id: (envelope.crystal_id as string).toUpperCase() };
        },
        "invalid_crystal_id",
      ],
      [
        "a parent that is not an id",
        () => ({ ...valid(), parent_crystal_id: "genesis" }),
        "invalid_parent_crystal_id",
      ],
      [
        "its own parent",
        () => {
          const envelope = valid();
          return { ...envelope, parent_crystal_id: envelope.crystal_id };
        },
        "invalid_parent_crystal_id",
      ],
      [
        "a tenant that is not a hash",
        () => ({ ...valid(), tenant_hash: "acme" }),
        "invalid_tenant_hash",
      ],
      [
        "an upper-case tenant",
        () => ({ ...valid(), tenant_hash: tenant.toUpperCase() }),
        "invalid_tenant_hash",
      ],
      ["another cipher", () => ({ ...valid(), cipher: "aes-128-gcm" }), "unsupported_cipher"],
      ["a null cipher", () => ({ ...valid(), cipher: null }), "unsupported_cipher"],
      [
        "an 11-byte nonce",
        () => ({ ...valid(), nonce: randomBytes(11).toString("base64url") }),
        "invalid_nonce",
      ],
      [
        "a standard-base64 nonce",
        () => ({ ...valid(), nonce: "+/+/+/+/+/+/+/+/" }),
        "invalid_nonce",
      ],
      [
        "a ciphertext padded past a multiple of 4",
        () => {
          const envelope = valid();
          const bytes = Buffer.from(envelope.ciphertext as string, "base64url");
          return { ...envelope, ciphertext: `${pythonUrlsafeB64encode(bytes)}=` };
        },
        "invalid_ciphertext",
      ],
      [
        "a padded nonce (12 bytes are 16 characters: nothing to pad)",
        () => {
          const envelope = valid();
          return { ...envelope, nonce: `${envelope.nonce as string}====` };
        },
        "invalid_nonce",
      ],
      [
        "a ciphertext with whitespace",
        () => {
          const envelope = valid();
          return { ...envelope, ciphertext: ` ${envelope.ciphertext as string}` };
        },
        "invalid_ciphertext",
      ],
      [
        "a ciphertext with non-zero pad bits",
        () => {
          // 16 bytes are 22 characters; the last carries 4 unused bits.
          const text = Buffer.alloc(16).toString("base64url");
          return { ...valid(), ciphertext: `${text.slice(0, 21)}B`, size_bytes: 16 };
        },
        "invalid_ciphertext",
      ],
      [
        "a ciphertext shorter than the tag",
        () => ({
          ...valid(),
          ciphertext: shortCiphertext.toString("base64url"),
          crystal_id: sha256Id(shortCiphertext),
          size_bytes: 15,
        }),
        "invalid_ciphertext",
      ],
      ["size_bytes as a string", () => ({ ...valid(), size_bytes: "44" }), "invalid_size_bytes"],
      [
        "size_bytes as a float",
        () => JSON.stringify(valid()).replace(/"size_bytes":(\d+)/, '"size_bytes":$1.0'),
        "invalid_size_bytes",
      ],
      ["size_bytes off by one", wrongSize, "size_mismatch"],
      [
        "a crystal_id of other bytes",
        () => ({ ...valid(), crystal_id: sha256Id(Buffer.from("other")) }),
        "crystal_id_mismatch",
      ],
      [
        "created_at with a space",
        () => ({ ...valid(), created_at: "2030-01-01 00:00:00Z" }),
        "invalid_created_at",
      ],
      [
        "created_at on 30 February",
        () => ({ ...valid(), created_at: "2030-02-30T00:00:00Z" }),
        "invalid_created_at",
      ],
      [
        "created_at in a leap second",
        () => ({ ...valid(), created_at: "2030-12-31T23:59:60Z" }),
        "invalid_created_at",
      ],
      [
        "created_at without a zone",
        () => ({ ...valid(), created_at: "2030-01-01T00:00:00" }),
        "invalid_created_at",
      ],
      [
        "metadata_public as a list",
        () => ({ ...valid(), metadata_public: [] }),
        "invalid_metadata_public",
      ],
      [
        "metadata_public null",
        () => ({ ...valid(), metadata_public: null }),
        "invalid_metadata_public",
      ],
      [
        "metadata_public with a float",
        () => ({ ...valid(), metadata_public: { score: 0.5 } }),
        "invalid_metadata_public",
      ],
      [
        "metadata_public over 4 KiB",
        () => ({ ...valid(), metadata_public: { pad: "x".repeat(4096) } }),
        "metadata_too_large",
      ],
    ];
    for (const [name, body, code] of cases) {
      test(`${name} → 400 ${code}`, async () => {
        const response = await post(body());
        assert.equal(response.statusCode, 400, response.body);
        assert.equal(response.headers["content-type"], JSON_TYPE);
        const payload = response.json<{ error: string; detail: string }>();
        assert.equal(payload.error, code, response.body);
        assert.equal(typeof payload.detail, "string");
      });
    }

    test("the refusals name what is wrong", async () => {
      const unknown = await post({ ...valid(), owner: "me" });
      assert.deepEqual(unknown.json(), {
        error: "unknown_member",
        detail: "'owner' is not a member of a svc-crystal/1.0 envelope",
      });
      const oversized = await post({ ...valid(), metadata_public: { pad: "x".repeat(4096) } });
      assert.deepEqual(oversized.json(), {
        error: "metadata_too_large",
        detail: "metadata_public is 4106 bytes in canonical form",
        limit: 4096,
      });
      const mismatch = await post(wrongSize());
      assert.match(
        mismatch.json<{ detail: string }>().detail,
        /^size_bytes is \d+ but the ciphertext is \d+ bytes$/,
      );
    });

    test("4 KiB of canonical metadata exactly is accepted", async () => {
      // {"pad":"…"} is 10 bytes around the string.
      const envelope = seal(tenant, { metadataPublic: { pad: "x".repeat(4086) } });
      await created(envelope);
    });
  });

  describe("clients that pad base64url, as the reference's Python clients do", () => {
    // Ciphertexts of 17, 18 and 19 bytes: Python pads two of the three lengths.
    const PLAINTEXT_LENGTHS = [1, 2, 3];

    test("padded envelopes are stored and read back padded, so urlsafe_b64decode works", async () => {
      let paddedCount = 0;
      for (const length of PLAINTEXT_LENGTHS) {
        const tenant = freshTenant();
        const plaintext = randomBytes(length);
        const sealed = seal(tenant, { plaintext });
        const envelope = pythonSpelling(sealed);
        if (envelope.ciphertext.endsWith("=")) paddedCount += 1;
        const response = await created(envelope);
        // The id is the hash of the ciphertext bytes, not of their spelling.
        assert.equal(response.json<{ crystal_id: string }>().crystal_id, sealed.crystal_id);
        const served = await getCrystal(sealed.crystal_id, tenant);
        assert.equal(served.statusCode, 200, served.body);
        const fetched = served.json<CrystalEnvelope>();
        assert.equal(fetched.ciphertext, envelope.ciphertext);
        assert.equal(fetched.nonce, envelope.nonce);
        // What a Python client does with what it reads back.
        const ciphertext = pythonUrlsafeB64decode(fetched.ciphertext);
        assert.equal(sha256Id(ciphertext), fetched.crystal_id);
        assert.equal(ciphertext.length, fetched.size_bytes);
        assert.equal(pythonUrlsafeB64decode(fetched.nonce).length, 12);
        assert.deepEqual(openCrystal(fetched, KEY), plaintext);
      }
      assert.equal(paddedCount, 2);
    });

    test("what an unpadding client wrote is what it reads back", async () => {
      const tenant = freshTenant();
      const envelope = seal(tenant, { plaintext: randomBytes(1) });
      assert.ok(!envelope.ciphertext.endsWith("="));
      await created(envelope);
      const fetched = (await getCrystal(envelope.crystal_id, tenant)).json<CrystalEnvelope>();
      assert.equal(fetched.ciphertext, envelope.ciphertext);
      // A padding-requiring decoder cannot read this spelling: hence serving each its own.
      assert.throws(() => pythonUrlsafeB64decode(fetched.ciphertext), PythonBase64Error);
    });

    for (const paddedFirst of [true, false]) {
      const order = paddedFirst ? "padded, then unpadded" : "unpadded, then padded";
      test(`${order}: one crystal, 200 idempotent, the first writer's bytes served`, async () => {
        for (const length of PLAINTEXT_LENGTHS) {
          const tenant = freshTenant();
          const envelope = seal(tenant, { plaintext: randomBytes(length) });
          const [first, second] = paddedFirst
            ? [pythonSpelling(envelope), envelope]
            : [envelope, pythonSpelling(envelope)];
          const stored = await created(first);
          const before = await getCrystal(envelope.crystal_id, tenant);
          const again = await post(second);
          assert.equal(again.statusCode, 200, again.body);
          assert.equal(again.body, stored.body);
          const after = await getCrystal(envelope.crystal_id, tenant);
          assert.deepEqual(after.rawPayload, before.rawPayload);
          assert.equal(after.json<CrystalEnvelope>().ciphertext, first.ciphertext);
          assert.equal((await lineage(tenant)).json<{ count: number }>().count, 1);
        }
      });
    }

    test("a different envelope in the other spelling is still 409 crystal_conflict", async () => {
      const tenant = freshTenant();
      const envelope = seal(tenant, { plaintext: randomBytes(1) });
      await created(pythonSpelling(envelope));
      const changed = { ...envelope, metadata_public: { changed: true } };
      for (const spelling of [changed, pythonSpelling(changed)]) {
        const response = await post(spelling);
        assert.equal(response.statusCode, 409, response.body);
        assert.deepEqual(response.json(), { error: "crystal_conflict" });
      }
    });

    test("padding is held to the other rules: place, amount, alphabet, whitespace, bits", async () => {
      const tenant = freshTenant();
      // 17 bytes: 23 characters unpadded, 24 with one `=`.
      const envelope = seal(tenant, { plaintext: randomBytes(1) });
      const padded = pythonSpelling(envelope).ciphertext;
      assert.equal(padded.length, 24);
      const unpadded = padded.slice(0, 23);
      const bytes = Buffer.from(unpadded, "base64url");
      const standard = bytes.toString("base64");
      const spellings = [
        `${unpadded}==`,
        `${unpadded}===`,
        `${unpadded.slice(0, 20)}=${unpadded.slice(20)}`,
        `=${unpadded}`,
        `${padded} `,
        `${padded}\n`,
        `${unpadded} =`,
        // The standard alphabet, padded: what b64encode (not urlsafe_) writes.
        standard.includes("+") || standard.includes("/") ? standard : `+${standard.slice(1)}`,
        // The last character carries 2 unused bits; set one of them.
        `${unpadded.slice(0, 22)}${String.fromCharCode(unpadded.charCodeAt(22) + 1)}=`,
      ];
      for (const ciphertext of spellings) {
        const response = await post({ ...envelope, ciphertext });
        assert.equal(response.statusCode, 400, JSON.stringify(ciphertext));
        assert.deepEqual(response.json(), {
          error: "invalid_ciphertext",
          detail:
            "ciphertext must be base64url, padded or not, with no whitespace and zero unused bits",
        });
      }
      // Nothing was stored on the way: the well-formed spelling is still new.
      await created(pythonSpelling(envelope));
    });
  });

  describe("GET /crystals/{crystal_id}", () => {
    test("a wrong tenant and a missing crystal are the same 404", async () => {
      const tenant = freshTenant();
      const envelope = seal(tenant);
      await created(envelope);
      const wrongTenant = await getCrystal(envelope.crystal_id, freshTenant());
      const missing = await getCrystal(sha256Id(Buffer.from("never stored")), tenant);
      for (const response of [wrongTenant, missing]) {
        assert.equal(response.statusCode, 404);
        assert.equal(response.body, '{"error":"crystal_not_found"}');
      }
      assert.deepEqual(stableHeaders(wrongTenant.headers), stableHeaders(missing.headers));
      assert.equal(wrongTenant.headers["cache-control"], "private, no-store");
    });

    test("If-None-Match with the crystal id is 304; for a wrong tenant it is still 404", async () => {
      const tenant = freshTenant();
      const envelope = seal(tenant);
      await created(envelope);
      const etag = `"${envelope.crystal_id}"`;
      const current = await getCrystal(envelope.crystal_id, tenant, { "if-none-match": etag });
      assert.equal(current.statusCode, 304);
      assert.equal(current.body, "");
      assert.equal(current.headers.etag, etag);
      const other = await getCrystal(envelope.crystal_id, tenant, { "if-none-match": '"x"' });
      assert.equal(other.statusCode, 200);
      const foreign = await getCrystal(envelope.crystal_id, freshTenant(), {
        "if-none-match": "*",
      });
      assert.equal(foreign.statusCode, 404);
    });

    test("hex of either case and a percent-encoded colon name the same crystal", async () => {
      const tenant = freshTenant();
      const envelope = seal(tenant);
      await created(envelope);
      const upper = `sha256:${envelope.crystal_id.slice(7).toUpperCase()}`;
      const encoded = envelope.crystal_id.replace(":", "%3A");
      for (const id of [upper, encoded]) {
        const response = await getCrystal(id, `sha256:${tenant.slice(7).toUpperCase()}`);
        assert.equal(response.statusCode, 200, response.body);
      }
    });

    test("the tenant is required, must be a hash, and header and query must agree", async () => {
      const tenant = freshTenant();
      const id = sha256Id(Buffer.from("any"));
      const cases: [string, Record<string, string>, string][] = [
        [`/crystals/${id}`, {}, "missing_tenant"],
        [`/crystals/${id}?tenant=acme`, {}, "invalid_tenant_hash"],
        [`/crystals/${id}`, { "x-tenant-hash": "acme" }, "invalid_tenant_hash"],
        [`/crystals/${id}?tenant=${tenant}&tenant=${tenant}`, {}, "invalid_tenant_hash"],
        [
          `/crystals/${id}?tenant=${tenant}`,
          { "x-tenant-hash": freshTenant() },
          "ambiguous_tenant",
        ],
        [`/crystals/${id.slice(7)}?tenant=${tenant}`, {}, "invalid_crystal_id"],
        [`/crystals/lineage`, {}, "missing_tenant"],
        [`/crystals/lineage?tenant=sha256:00`, {}, "invalid_tenant_hash"],
      ];
      for (const [url, headers, code] of cases) {
        const response = await get(url, headers);
        assert.equal(response.statusCode, 400, `${url} → ${response.body}`);
        assert.equal(response.json<{ error: string }>().error, code, url);
        assert.equal(response.headers["cache-control"], "private, no-store");
      }
      const agreeing = await get(`/crystals/${id}?tenant=${tenant}`, { "x-tenant-hash": tenant });
      assert.equal(agreeing.statusCode, 404);
    });
  });

  describe("GET /crystals/lineage", () => {
    test("a branching DAG: ordered by created_at then id, one root, both heads", async () => {
      const tenant = freshTenant();
      const root = seal(tenant, { createdAt: "2030-01-01T00:00:00Z", metadataPublic: { n: 0 } });
      await created(root);
      const children = [1, 2].map((n) =>
        seal(tenant, {
          parentCrystalId: root.crystal_id,
          createdAt: "2030-01-01T00:00:01Z",
          metadataPublic: { n },
        }),
      );
      // Written out of order: the listing does not follow the writes.
      const grandchild = seal(tenant, {
        parentCrystalId: children[0]!.crystal_id,
        // 00:00:02Z, written with an offset: instants are compared, not strings.
        createdAt: "2030-01-01T01:00:02+01:00",
      });
      for (const child of children) await created(child);
      await created(grandchild);
      // Someone else's tenant is not part of it.
      await created(seal(freshTenant()));

      const response = await lineage(tenant);
      assert.equal(response.statusCode, 200, response.body);
      assert.equal(response.headers["content-type"], JSON_TYPE);
      assert.equal(response.headers["cache-control"], "private, no-store");
      const [first, second] = [...children].sort((a, b) => (a.crystal_id < b.crystal_id ? -1 : 1));
      const entry = (envelope: CrystalEnvelope) => ({
        crystal_id: envelope.crystal_id,
        parent_crystal_id: envelope.parent_crystal_id,
        size_bytes: envelope.size_bytes,
        created_at: envelope.created_at,
        metadata_public: envelope.metadata_public,
      });
      assert.deepEqual(response.json(), {
        tenant_hash: tenant,
        count: 4,
        crystals: [root, first!, second!, grandchild].map(entry),
        roots: [root.crystal_id],
        // The first child has a child of its own; the second child and the grandchild do not.
        heads: [children[1]!.crystal_id, grandchild.crystal_id],
      });
    });

    test("an unknown tenant has an empty lineage, like a tenant with nothing stored", async () => {
      const tenant = freshTenant();
      const response = await get(`/crystals/lineage`, { "x-tenant-hash": tenant });
      assert.equal(response.statusCode, 200);
      assert.deepEqual(response.json(), {
        tenant_hash: tenant,
        count: 0,
        crystals: [],
        roots: [],
        heads: [],
      });
    });

    test("two roots are both roots and both heads", async () => {
      const tenant = freshTenant();
      const one = seal(tenant, { createdAt: "2030-01-01T00:00:00.5Z" });
      const two = seal(tenant, { createdAt: "2030-01-01T00:00:00.25Z" });
      await created(one);
      await created(two);
      const payload = (await lineage(tenant)).json<{ roots: string[]; heads: string[] }>();
      assert.deepEqual(payload.roots, [two.crystal_id, one.crystal_id]);
      assert.deepEqual(payload.heads, [two.crystal_id, one.crystal_id]);
    });
  });

  describe("contract", () => {
    test("/info describes crystals", async () => {
      const info = (await get("/info")).json<{ crystals: unknown }>();
      assert.deepEqual(info.crystals, {
        specification: "svc-crystal/1.0",
        supported_ciphers: ["chacha20-poly1305", "aes-256-gcm"],
        max_crystal_size_bytes: 2 * MIB,
        quota_bytes_per_tenant: 256 * MIB,
        quota_bytes_per_key: 1024 * MIB,
        ttl_days: 90,
        isolation:
          "per tenant_hash: the first principal to write a tenant owns it and only it may write " +
          "there; reads need the tenant hash; another tenant's crystal and a missing one are the " +
          "same 404; no endpoint lists tenants",
      });
    });

    test("/openapi.json documents the three operations and stays valid OpenAPI 3.1", async () => {
      const document = (await get("/openapi.json")).json<{
        paths: Record<string, Record<string, { description?: string }>>;
      }>();
      assert.ok(document.paths["/crystals"]?.post?.description);
      assert.ok(document.paths["/crystals/{crystal_id}"]?.get?.description);
      assert.ok(document.paths["/crystals/lineage"]?.get?.description);
      const result = await new Validator().validate(structuredClone(document));
      assert.deepEqual(result, { valid: true });
    });
  });

  // Last: it expires every crystal this service holds.
  describe("after expiry (issue 24)", () => {
    test("an expired chain is gone from GET and the lineage; its parent cannot be named", async () => {
      const tenant = freshTenant();
      const root = seal(tenant);
      const child = seal(tenant, { parentCrystalId: root.crystal_id });
      await created(root);
      await created(child);
      const report = await expireCrystals(service.app.documentStore, {
        ttlDays: 1,
        now: new Date(Date.now() + 3 * 86_400_000),
      });
      assert.equal(report.expired >= 2, true);
      assert.equal((await getCrystal(root.crystal_id, tenant)).statusCode, 404);
      assert.equal((await getCrystal(child.crystal_id, tenant)).statusCode, 404);
      const listed = await lineage(tenant);
      assert.equal(listed.statusCode, 200);
      assert.deepEqual(listed.json(), {
        tenant_hash: tenant,
        count: 0,
        crystals: [],
        roots: [],
        heads: [],
      });
      assert.equal((await post({ ...child })).statusCode, 422);
      await created(root);
      assert.equal((await post({ ...child })).statusCode, 201);
    });
  });
});

describe("crystal quotas (issue 24)", () => {
  let service: TestService;
  const postAs = (envelope: CrystalEnvelope) =>
    service.app.inject({ method: "POST", url: "/crystals", payload: envelope });

  before(async () => {
    // Room for two small crystals per tenant and three per principal.
    service = await startTestService({
      limits: { crystalTenantQuotaBytes: 1500, crystalPrincipalQuotaBytes: 2000 },
    });
  });
  after(() => service.close());

  test("/info publishes both quotas", async () => {
    const crystals = (await service.app.inject({ method: "GET", url: "/info" })).json().crystals;
    assert.equal(crystals.quota_bytes_per_tenant, 1500);
    assert.equal(crystals.quota_bytes_per_key, 2000);
  });

  test("a tenant, then a principal, past its quota is refused with the limit named", async () => {
    const tenant = freshTenant();
    const first = seal(tenant);
    assert.equal((await postAs(first)).statusCode, 201);
    assert.equal((await postAs(seal(tenant))).statusCode, 201);
    // The same crystal again costs nothing more.
    assert.equal((await postAs(first)).statusCode, 200);
    const overTenant = await postAs(seal(tenant));
    assert.equal(overTenant.statusCode, 403);
    assert.equal(overTenant.json().error, "crystal_quota_exceeded");
    assert.match(
      overTenant.json().detail,
      /this tenant holds \d+ bytes.*CRYSTAL_TENANT_QUOTA_BYTES/,
    );

    const other = freshTenant();
    const overKey = await postAs(seal(other));
    assert.equal(overKey.statusCode, 403);
    assert.match(overKey.json().detail, /this principal holds \d+ bytes.*CRYSTAL_KEY_QUOTA_BYTES/);
  });
});
