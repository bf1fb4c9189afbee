/** The crystal client helper (service.md §6): seal and open, both ciphers, and what breaks them. */
import assert from "node:assert/strict";
import { createDecipheriv, createHash, randomBytes } from "node:crypto";
import { describe, test } from "node:test";
import {
  type CrystalEnvelope,
  CrystalOpenError,
  openCrystal,
  sealCrystal,
  tenantHashOf,
} from "../../src/crystals/client.js";
import { CRYSTAL_CIPHERS } from "../../src/crystals/envelope.js";
import { pythonUrlsafeB64encode } from "../support/python-base64.js";

const KEY = randomBytes(32);
const TENANT = tenantHashOf("client test tenant secret");
const PARENT = `sha256:${"ab".repeat(32)}`;
const PLAINTEXT = Buffer.from("the agent's working memory, in confidence");

const reencode = (bytes: Buffer) => bytes.toString("base64url");

/** `envelope` with its ciphertext replaced, `crystal_id` and `size_bytes` made to match again. */
function withCiphertext(envelope: CrystalEnvelope, ciphertext: Buffer): CrystalEnvelope {
  return {
    ...envelope,
    ciphertext: reencode(ciphertext),
    crystal_id: `sha256:${createHash("sha256").update(ciphertext).digest("hex")}`,
    size_bytes: ciphertext.length,
  };
}

function opensNot(envelope: CrystalEnvelope, message: RegExp, key: Uint8Array = KEY) {
  assert.throws(
    () => openCrystal(envelope, key),
    (error: unknown) => error instanceof CrystalOpenError && message.test(error.message),
  );
}

describe("sealCrystal / openCrystal", () => {
  for (const cipher of CRYSTAL_CIPHERS) {
    describe(cipher, () => {
      const envelope = sealCrystal({
        plaintext: PLAINTEXT,
        key: KEY,
        tenantHash: TENANT,
        parentCrystalId: PARENT,
        cipher,
        metadataPublic: { kind: "memory" },
        createdAt: "2030-05-06T07:08:09.123Z",
      });

      test("the envelope says what the ciphertext is", () => {
        const ciphertext = Buffer.from(envelope.ciphertext, "base64url");
        assert.equal(envelope.spec, "svc-crystal/1.0");
        assert.equal(envelope.cipher, cipher);
        assert.equal(ciphertext.length, PLAINTEXT.length + 16);
        assert.equal(envelope.size_bytes, ciphertext.length);
        assert.equal(
          envelope.crystal_id,
          `sha256:${createHash("sha256").update(ciphertext).digest("hex")}`,
        );
        assert.equal(Buffer.from(envelope.nonce, "base64url").length, 12);
        assert.deepEqual(envelope.metadata_public, { kind: "memory" });
        assert.equal(envelope.parent_crystal_id, PARENT);
      });

      test("opens to the plaintext", () => {
        assert.deepEqual(openCrystal(envelope, KEY), PLAINTEXT);
      });

      test("the AAD is <cipher>|<tenant_hash>|<parent>|<created_at>, the tag appended", () => {
        const sealed = Buffer.from(envelope.ciphertext, "base64url");
        const decipher = createDecipheriv(
          cipher as "aes-256-gcm",
          KEY,
          Buffer.from(envelope.nonce, "base64url"),
          { authTagLength: 16 },
        );
        decipher.setAAD(Buffer.from(`${cipher}|${TENANT}|${PARENT}|2030-05-06T07:08:09.123Z`));
        decipher.setAuthTag(sealed.subarray(-16));
        const opened = Buffer.concat([decipher.update(sealed.subarray(0, -16)), decipher.final()]);
        assert.deepEqual(opened, PLAINTEXT);
      });

      test("a flipped ciphertext byte does not open, even with a matching crystal_id", () => {
        const sealed = Buffer.from(envelope.ciphertext, "base64url");
        for (const index of [0, sealed.length - 1]) {
          const tampered = Buffer.from(sealed);
          tampered[index]! ^= 0x01;
          opensNot(withCiphertext(envelope, tampered), /^authentication failed/);
          opensNot({ ...envelope, ciphertext: reencode(tampered) }, /crystal_id does not match/);
        }
      });

      test("moving it to another tenant, parent, time or cipher label does not open", () => {
        const other = tenantHashOf("someone else");
        const otherCipher = CRYSTAL_CIPHERS.find((name) => name !== cipher)!;
        for (const moved of [
          { ...envelope, tenant_hash: other },
          { ...envelope, parent_crystal_id: null },
          { ...envelope, created_at: "2030-05-06T07:08:09.124Z" },
          { ...envelope, cipher: otherCipher },
        ]) {
          opensNot(moved, /^authentication failed/);
        }
      });

      test("the wrong key does not open", () => {
        opensNot(envelope, /^authentication failed/, randomBytes(32));
      });
    });
  }

  test("a root uses 'genesis' in the AAD and defaults to chacha20-poly1305 and {}", () => {
    const envelope = sealCrystal({ plaintext: PLAINTEXT, key: KEY, tenantHash: TENANT });
    assert.equal(envelope.cipher, "chacha20-poly1305");
    assert.equal(envelope.parent_crystal_id, null);
    assert.deepEqual(envelope.metadata_public, {});
    assert.match(envelope.created_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    const sealed = Buffer.from(envelope.ciphertext, "base64url");
    const decipher = createDecipheriv(
      "chacha20-poly1305",
      KEY,
      Buffer.from(envelope.nonce, "base64url"),
      { authTagLength: 16 },
    );
    decipher.setAAD(Buffer.from(`chacha20-poly1305|${TENANT}|genesis|${envelope.created_at}`), {
      plaintextLength: sealed.length - 16,
    });
    decipher.setAuthTag(sealed.subarray(-16));
    assert.deepEqual(
      Buffer.concat([decipher.update(sealed.subarray(0, -16)), decipher.final()]),
      PLAINTEXT,
    );
    const { cipher: _default, ...withoutCipher } = envelope;
    assert.deepEqual(openCrystal(withoutCipher, KEY), PLAINTEXT);
  });

  test("every seal has a fresh nonce, so the same plaintext is a different crystal", () => {
    const seal = () =>
      sealCrystal({
        plaintext: PLAINTEXT,
        key: KEY,
        tenantHash: TENANT,
        createdAt: "2030-01-01T00:00:00Z",
      });
    const [one, two] = [seal(), seal()];
    assert.notEqual(one.nonce, two.nonce);
    assert.notEqual(one.crystal_id, two.crystal_id);
  });

  test("an empty plaintext is a tag alone", () => {
    const envelope = sealCrystal({ plaintext: new Uint8Array(), key: KEY, tenantHash: TENANT });
    assert.equal(envelope.size_bytes, 16);
    assert.equal(openCrystal(envelope, KEY).length, 0);
  });

  test("an envelope written with Python's urlsafe_b64encode (padded) opens", () => {
    for (const length of [0, 1, 2]) {
      const plaintext = randomBytes(length);
      const envelope = sealCrystal({ plaintext, key: KEY, tenantHash: TENANT });
      const padded = {
        ...envelope,
        nonce: pythonUrlsafeB64encode(Buffer.from(envelope.nonce, "base64url")),
        ciphertext: pythonUrlsafeB64encode(Buffer.from(envelope.ciphertext, "base64url")),
      };
      assert.equal(padded.ciphertext.endsWith("="), (length + 16) % 3 !== 0);
      assert.deepEqual(openCrystal(padded, KEY), plaintext);
    }
  });

  test("malformed envelopes are refused before decrypting", () => {
    const envelope = sealCrystal({ plaintext: PLAINTEXT, key: KEY, tenantHash: TENANT });
    opensNot(
      { ...envelope, spec: "svc-crystal/2.0" as "svc-crystal/1.0" },
      /not a svc-crystal\/1.0/,
    );
    opensNot({ ...envelope, nonce: `${envelope.nonce}AA` }, /nonce/);
    // 57 bytes are 76 characters: no padding belongs there.
    opensNot({ ...envelope, ciphertext: `${envelope.ciphertext}=` }, /ciphertext/);
    opensNot({ ...envelope, size_bytes: envelope.size_bytes + 1 }, /size_bytes/);
    opensNot({ ...envelope, cipher: "rot13" as "aes-256-gcm" }, /unsupported cipher/);
  });

  test("bad options are refused with a RangeError", () => {
    const base = { plaintext: PLAINTEXT, key: KEY, tenantHash: TENANT };
    for (const options of [
      { ...base, key: randomBytes(16) },
      { ...base, tenantHash: "acme" },
      { ...base, tenantHash: TENANT.toUpperCase() },
      { ...base, parentCrystalId: "genesis" },
      { ...base, createdAt: "yesterday" },
      { ...base, cipher: "aes-128-gcm" as "aes-256-gcm" },
    ]) {
      assert.throws(() => sealCrystal(options), RangeError);
    }
    assert.throws(() => openCrystal(sealCrystal(base), randomBytes(31)), RangeError);
  });

  test("tenantHashOf is sha256: and the hex SHA-256 of the secret", () => {
    assert.equal(
      tenantHashOf("abc"),
      "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
    );
  });
});
