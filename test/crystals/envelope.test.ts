/**
 * Envelope rules and lineage building (service.md §6), below HTTP: the encodings, the
 * timestamp rule, the canonical stored form, the published schema, and lineage ordering.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { describe, test } from "node:test";
import { type CrystalEnvelope, sealCrystal, tenantHashOf } from "../../src/crystals/client.js";
import {
  CRYSTAL_TAG_BYTES,
  decodeBase64url,
  isCrystalRefusal,
  rfc3339Instant,
  sameCrystal,
  type ValidCrystal,
  validateEnvelope,
} from "../../src/crystals/envelope.js";
import { lineageJson, lineageSummary } from "../../src/crystals/lineage.js";
import { crystalEnvelopeSchema } from "../../src/service/endpoints/crystals/contract.js";
import { bodyValidator } from "../../src/validation/body-validator.js";
import { parseJson } from "../../src/verifier/json/parse.js";
import { pythonUrlsafeB64encode } from "../support/python-base64.js";

const KEY = randomBytes(32);
const TENANT = tenantHashOf("envelope test tenant");
const LIMITS = { maxCiphertextBytes: 2 * 1024 * 1024 };

function valid(text: string): ValidCrystal {
  const result = validateEnvelope(parseJson(text), LIMITS);
  if (isCrystalRefusal(result)) assert.fail(`${result.error}: ${result.detail}`);
  return result;
}

/** The envelope as the reference's Python clients write it: padded base64url. */
function pythonSpelling(envelope: CrystalEnvelope): CrystalEnvelope {
  return {
    ...envelope,
    nonce: pythonUrlsafeB64encode(Buffer.from(envelope.nonce, "base64url")),
    ciphertext: pythonUrlsafeB64encode(Buffer.from(envelope.ciphertext, "base64url")),
  };
}

function sealedText(options: { createdAt?: string; parentCrystalId?: string | null } = {}) {
  return JSON.stringify(
    sealCrystal({ plaintext: randomBytes(40), key: KEY, tenantHash: TENANT, ...options }),
  );
}

describe("decodeBase64url", () => {
  test("unpadded base64url of any length decodes", () => {
    for (let length = 0; length <= 6; length += 1) {
      const bytes = randomBytes(length);
      assert.deepEqual(decodeBase64url(bytes.toString("base64url")), bytes);
    }
  });

  test("so does what Python's urlsafe_b64encode writes, padding included", () => {
    for (let length = 0; length <= 40; length += 1) {
      const bytes = randomBytes(length);
      const padded = pythonUrlsafeB64encode(bytes);
      assert.equal(padded.endsWith("="), length % 3 !== 0, padded);
      assert.deepEqual(decodeBase64url(padded), bytes, padded);
    }
    assert.deepEqual(decodeBase64url("-w=="), Buffer.from([0xfb]));
    assert.deepEqual(decodeBase64url("-_8="), Buffer.from([0xfb, 0xff]));
  });

  for (const text of [
    // The wrong amount of padding, or padding where none belongs.
    "AA=",
    "AA===",
    "AAA==",
    "AAAA=",
    "AAAA====",
    "A===",
    "====",
    "=",
    // Padding anywhere but the end.
    "AA==AA==",
    "A=AA",
    // Non-zero unused bits, padded or not.
    "AB",
    "AB==",
    "AAB",
    "AAB=",
    // Lengths no byte string has; the standard alphabet; whitespace; anything else.
    "A",
    "AAAAA",
    "+w",
    "/w==",
    "AA AA",
    "AA\nAA",
    "AA==\n",
    " AA==",
    "Zm9v!",
  ]) {
    test(`refuses ${JSON.stringify(text)}`, () => {
      assert.equal(decodeBase64url(text), null);
    });
  }
});

describe("sameCrystal", () => {
  test("the padded and unpadded stored forms of one envelope are one crystal", () => {
    for (const length of [1, 2, 3]) {
      const envelope = sealCrystal({
        plaintext: randomBytes(length),
        key: KEY,
        tenantHash: TENANT,
      });
      const unpadded = valid(JSON.stringify(envelope));
      const padded = valid(JSON.stringify(pythonSpelling(envelope)));
      assert.equal(unpadded.crystalId, padded.crystalId);
      assert.equal(sameCrystal(padded.canonical, unpadded.canonical), true);
      assert.equal(sameCrystal(unpadded.canonical, padded.canonical), true);
      // 17 and 19 bytes are padded; 18, a multiple of 3, has one spelling only.
      assert.equal(
        padded.canonical.equals(unpadded.canonical),
        (length + CRYSTAL_TAG_BYTES) % 3 === 0,
      );
    }
  });

  test("anything else that differs is another envelope", () => {
    const envelope = sealCrystal({ plaintext: randomBytes(8), key: KEY, tenantHash: TENANT });
    const padded = valid(JSON.stringify(pythonSpelling(envelope))).canonical;
    const others = [
      { ...envelope, metadata_public: { n: 1 } },
      { ...envelope, created_at: "2030-01-01T00:00:00Z" },
      { ...envelope, cipher: "aes-256-gcm" },
      { ...envelope, nonce: randomBytes(12).toString("base64url") },
      // The metadata may hold a member named ciphertext, padding and all.
      { ...envelope, metadata_public: { ciphertext: `${envelope.ciphertext}==` } },
    ];
    for (const other of others) {
      const canonical = valid(JSON.stringify(other)).canonical;
      assert.equal(sameCrystal(padded, canonical), false, JSON.stringify(other));
      assert.equal(sameCrystal(canonical, padded), false, JSON.stringify(other));
    }
  });
});

describe("rfc3339Instant", () => {
  test("Z, offsets and fractions name instants", () => {
    assert.deepEqual(rfc3339Instant("1970-01-01T00:00:00Z"), { seconds: 0, nanos: 0 });
    assert.deepEqual(rfc3339Instant("1970-01-01T01:00:00+01:00"), { seconds: 0, nanos: 0 });
    assert.deepEqual(rfc3339Instant("1969-12-31T23:30:00-00:30"), { seconds: 0, nanos: 0 });
    assert.deepEqual(rfc3339Instant("1970-01-01t00:00:01.5z"), { seconds: 1, nanos: 500_000_000 });
    assert.deepEqual(rfc3339Instant("1970-01-01T00:00:00.000000001Z"), { seconds: 0, nanos: 1 });
    assert.deepEqual(rfc3339Instant("2024-02-29T12:00:00Z"), { seconds: 1_709_208_000, nanos: 0 });
    // Years below 100 are years, not 19xx.
    assert.equal(rfc3339Instant("0001-01-01T00:00:00Z")?.seconds, -62_135_596_800);
  });

  for (const text of [
    "2023-02-29T00:00:00Z",
    "2024-13-01T00:00:00Z",
    "2024-04-31T00:00:00Z",
    "2024-01-01T24:00:00Z",
    "2024-01-01T00:60:00Z",
    "2024-01-01T23:59:60Z",
    "2024-01-01T00:00:00+24:00",
    "2024-01-01T00:00:00.Z",
    "2024-01-01T00:00:00.0123456789Z",
    "2024-01-01T00:00:00",
    "2024-01-01",
    "2024-01-01T00:00:00Z\n",
    "２０２４-01-01T00:00:00Z",
  ]) {
    test(`refuses ${JSON.stringify(text)}`, () => {
      assert.equal(rfc3339Instant(text), null);
    });
  }
});

describe("validateEnvelope", () => {
  test("the stored form is JCS of every member, with the defaults filled in", () => {
    const envelope = JSON.parse(sealedText()) as Record<string, unknown>;
    delete envelope.cipher;
    delete envelope.metadata_public;
    const crystal = valid(JSON.stringify(envelope));
    assert.equal(crystal.cipher, "chacha20-poly1305");
    assert.deepEqual([...crystal.metadataPublic], []);
    const stored = JSON.parse(crystal.canonical.toString("utf8")) as Record<string, unknown>;
    assert.deepEqual(Object.keys(stored), [
      "cipher",
      "ciphertext",
      "created_at",
      "crystal_id",
      "metadata_public",
      "nonce",
      "parent_crystal_id",
      "size_bytes",
      "spec",
      "tenant_hash",
    ]);
    assert.equal(stored.cipher, "chacha20-poly1305");
    assert.deepEqual(stored.metadata_public, {});
  });

  test("an envelope in another member order or spacing has the same stored form", () => {
    const text = sealedText();
    const reordered = JSON.stringify(
      Object.fromEntries(Object.entries(JSON.parse(text) as object).reverse()),
      null,
      2,
    );
    assert.deepEqual(valid(reordered).canonical, valid(text).canonical);
  });

  test("metadata keeps exact integers", () => {
    const envelope = JSON.parse(sealedText()) as Record<string, unknown>;
    const text = JSON.stringify({ ...envelope, metadata_public: { n: 0 } }).replace(
      '"n":0',
      '"n":123456789012345678901234567890',
    );
    assert.match(
      valid(text).canonical.toString(),
      /"metadata_public":\{"n":123456789012345678901234567890\}/,
    );
  });

  test("the published body schema accepts what the rules accept", () => {
    const validate = bodyValidator(crystalEnvelopeSchema);
    for (const text of [
      sealedText(),
      sealedText({
        parentCrystalId: `sha256:${"0".repeat(64)}`,
        createdAt: "2030-01-01T00:00:00.123456789+05:30",
      }),
      JSON.stringify(
        pythonSpelling(sealCrystal({ plaintext: randomBytes(1), key: KEY, tenantHash: TENANT })),
      ),
    ]) {
      valid(text);
      assert.equal(validate(parseJson(text)), null);
    }
  });
});

describe("lineageJson", () => {
  const summaryOf = (createdAt: string, parentCrystalId: string | null = null) => {
    const crystal = valid(sealedText({ createdAt, parentCrystalId }));
    return { crystal, summary: lineageSummary(crystal) };
  };

  test("equal instants written differently order by id", () => {
    const one = summaryOf("2030-01-01T00:00:00Z");
    const two = summaryOf("2030-01-01T01:00:00+01:00");
    const three = summaryOf("2029-12-31T23:59:59.999999999Z");
    const payload = JSON.parse(lineageJson(TENANT, [one.summary, two.summary, three.summary])) as {
      crystals: { crystal_id: string }[];
    };
    const [first, second] = [one, two]
      .map((entry) => entry.crystal.crystalId)
      .sort((a, b) => (a < b ? -1 : 1));
    assert.deepEqual(
      payload.crystals.map((entry) => entry.crystal_id),
      [three.crystal.crystalId, first, second],
    );
  });

  test("a summary holds the lineage entry only, in JCS form", () => {
    const { crystal, summary } = summaryOf("2030-01-01T00:00:00Z");
    assert.equal(
      summary.toString("utf8"),
      `{"created_at":"2030-01-01T00:00:00Z","crystal_id":"${crystal.crystalId}",` +
        `"metadata_public":{},"parent_crystal_id":null,"size_bytes":${crystal.sizeBytes}}`,
    );
  });

  test("a summary the service cannot read is a fault, not an empty entry", () => {
    assert.throws(() => lineageJson(TENANT, [Buffer.from('{"crystal_id":"x"}')]), {
      name: "LineageSummaryError",
    });
  });
});
