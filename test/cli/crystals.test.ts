/** `receiptd crystals keygen | tenant | seal | open` (service.md §6, the client side). */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { main } from "../../src/cli/crystals.js";
import { isCrystalRefusal, validateEnvelope } from "../../src/crystals/envelope.js";
import { canonicalText } from "../../src/verifier/json/canonical.js";
import { parseJson } from "../../src/verifier/json/parse.js";

const RECEIPTD = fileURLToPath(new URL("../../src/cli/receiptd.ts", import.meta.url));
const TENANT = `sha256:${"1f".repeat(32)}`;

interface Run {
  code: number;
  stdout: Buffer;
  stderr: string;
}

async function run(argv: string[], stdin: Uint8Array | string = ""): Promise<Run> {
  const out: Buffer[] = [];
  let stderr = "";
  const code = await main(argv, {
    stdin: async () => Buffer.from(stdin),
    stdout: (data) => out.push(Buffer.from(data)),
    stderr: (text) => {
      stderr += text;
    },
  });
  return { code, stdout: Buffer.concat(out), stderr };
}

describe("receiptd crystals", () => {
  let dir: string;
  let keyFile: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "receiptd-crystals-cli-"));
    keyFile = join(dir, "crystal.key");
    const made = await run(["keygen", "--out", keyFile]);
    assert.equal(made.code, 0, made.stderr);
  });
  after(() => rm(dir, { recursive: true, force: true }));

  test("keygen writes 64 hex digits, mode 0600, and never overwrites", async () => {
    assert.match(await readFile(keyFile, "utf8"), /^[0-9a-f]{64}\n$/);
    assert.equal((await stat(keyFile)).mode & 0o777, 0o600);
    const before = await readFile(keyFile);
    const again = await run(["keygen", "--out", keyFile]);
    assert.equal(again.code, 2);
    assert.match(again.stderr, /^error: cannot create /);
    assert.deepEqual(await readFile(keyFile), before);
  });

  test("tenant prints sha256: and the hex SHA-256 of the secret file", async () => {
    const secret = join(dir, "tenant.secret");
    await writeFile(secret, "abc");
    const result = await run(["tenant", "--secret-file", secret]);
    assert.equal(result.code, 0);
    assert.equal(
      result.stdout.toString(),
      "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad\n",
    );
  });

  for (const cipher of ["chacha20-poly1305", "aes-256-gcm"]) {
    test(`seal then open returns the bytes (${cipher}); the envelope is what the service stores`, async () => {
      const plaintext = randomBytes(3000);
      const parent = `sha256:${"2e".repeat(32)}`;
      const sealed = await run(
        [
          "seal",
          "--key-file",
          keyFile,
          "--tenant",
          TENANT,
          "--parent",
          parent,
          "--cipher",
          cipher,
          "--metadata",
          '{"z":1,"a":"b"}',
          "--created-at",
          "2030-01-01T00:00:00Z",
        ],
        plaintext,
      );
      assert.equal(sealed.code, 0, sealed.stderr);
      const text = sealed.stdout.toString("utf8");
      assert.ok(text.endsWith("}\n"));
      const crystal = validateEnvelope(parseJson(text.trimEnd()), { maxCiphertextBytes: 1 << 21 });
      assert.ok(!isCrystalRefusal(crystal), JSON.stringify(crystal));
      assert.equal(crystal.canonical.toString("utf8"), text.trimEnd());
      assert.equal(crystal.cipher, cipher);
      assert.equal(crystal.parentCrystalId, parent);
      assert.equal(canonicalText(crystal.metadataPublic), '{"a":"b","z":1}');

      const opened = await run(["open", "--key-file", keyFile], sealed.stdout);
      assert.equal(opened.code, 0, opened.stderr);
      assert.deepEqual(opened.stdout, plaintext);
    });
  }

  test("a raw 32-byte key file works too", async () => {
    const rawKey = join(dir, "raw.key");
    await writeFile(rawKey, randomBytes(32));
    const sealed = await run(["seal", "--key-file", rawKey, "--tenant", TENANT], "hello");
    assert.equal(sealed.code, 0, sealed.stderr);
    const opened = await run(["open", "--key-file", rawKey], sealed.stdout);
    assert.equal(opened.stdout.toString(), "hello");
  });

  test("open: an altered envelope or the wrong key is exit 1", async () => {
    const sealed = await run(["seal", "--key-file", keyFile, "--tenant", TENANT], "secret");
    const envelope = JSON.parse(sealed.stdout.toString()) as Record<string, unknown>;
    const moved = JSON.stringify({ ...envelope, tenant_hash: `sha256:${"00".repeat(32)}` });
    const altered = await run(["open", "--key-file", keyFile], moved);
    assert.equal(altered.code, 1);
    assert.equal(altered.stdout.length, 0);
    assert.equal(
      altered.stderr,
      "error: authentication failed: the wrong key, or the envelope was altered\n",
    );
    const otherKey = join(dir, "other.key");
    await run(["keygen", "--out", otherKey]);
    assert.equal((await run(["open", "--key-file", otherKey], sealed.stdout)).code, 1);
    const notJson = await run(["open", "--key-file", keyFile], "{");
    assert.equal(notJson.code, 1);
    assert.match(notJson.stderr, /^error: the envelope is not JSON/);
  });

  test("usage errors are exit 2 with one line", async () => {
    const cases: [string[], RegExp][] = [
      [[], /^usage: receiptd crystals keygen/],
      [["burn"], /^usage: receiptd crystals keygen/],
      [["seal", "--tenant", TENANT], /^error: --key-file is required\n$/],
      [["seal", "--key-file", keyFile], /^error: --tenant is required\n$/],
      [["seal", "--key-file", keyFile, "--tenant", "acme"], /^error: the tenant hash must be/],
      [["seal", "--key-file", keyFile, "--tenant", TENANT, "--cipher", "aes"], /^error: --cipher/],
      [["seal", "--key-file", keyFile, "--tenant", TENANT, "--metadata", "[1]"], /object/],
      [["seal", "--key-file", keyFile, "--tenant", TENANT, "--metadata", '{"x":0.5}'], /canonical/],
      [["seal", "--key-file", keyFile, "--tenant", TENANT, "--created-at", "now"], /RFC 3339/],
      [
        ["open", "--key-file", keyFile, "--tenant", TENANT],
        /^error: --tenant does not apply to 'open'\n$/,
      ],
      [["open", "--key-file", join(dir, "missing.key")], /^error: cannot read /],
      [["open", "--key-file", keyFile, "extra"], /^error: unexpected argument 'extra'\n$/],
      [["open", "--bogus"], /^error: unknown option '--bogus'\n/],
    ];
    for (const [argv, stderr] of cases) {
      const result = await run(argv);
      assert.equal(result.code, 2, argv.join(" "));
      assert.match(result.stderr, stderr, argv.join(" "));
    }
    const badKey = join(dir, "bad.key");
    await writeFile(badKey, "not a key\n");
    const refused = await run(["open", "--key-file", badKey]);
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /is not a key: 64 hex digits or 32 raw bytes/);
  });

  test("receiptd crystals runs as a process: binary stdin to stdout and back", () => {
    const plaintext = randomBytes(256);
    const node = (args: string[], input: Buffer) =>
      spawnSync(process.execPath, ["--import", "tsx", RECEIPTD, "crystals", ...args], { input });
    const sealed = node(["seal", "--key-file", keyFile, "--tenant", TENANT], plaintext);
    assert.equal(sealed.status, 0, sealed.stderr.toString());
    const opened = node(["open", "--key-file", keyFile], sealed.stdout);
    assert.equal(opened.status, 0, opened.stderr.toString());
    assert.deepEqual(opened.stdout, plaintext);
  });
});
