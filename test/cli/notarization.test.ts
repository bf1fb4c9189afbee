/** `receiptd notarization verify` (docs/notarization.md): offline checks, trust, exit codes. */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { type AddressInfo, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { main } from "../../src/cli/notarization.js";
import {
  issueNotarization,
  notarizationAnswer,
  notarizationDocument,
  parseNotarizationRequest,
} from "../../src/notarization/index.js";
import { rotateServiceKey } from "../../src/service/key-rotation.js";
import { loadOrCreateServiceKey } from "../../src/service/service-key.js";
import { FsDocumentStore } from "../../src/storage/fs-document-store.js";
import { type Ed25519Signer, signerFromSeed } from "../../src/verifier/crypto/ed25519.js";
import { canonicalText } from "../../src/verifier/json/canonical.js";
import { dumpCompact } from "../../src/verifier/json/dump.js";
import { parseJson } from "../../src/verifier/json/parse.js";
import type { JsonObject } from "../../src/verifier/json/value.js";
import {
  buildRevocationDocument,
  signRevocationStatement,
} from "../../src/verifier/revocations/document.js";
import { startTestService, type TestService } from "../service/support/service.js";

const RECEIPTD = fileURLToPath(new URL("../../src/cli/receiptd.ts", import.meta.url));
const signer = signerFromSeed(new Uint8Array(32).fill(11));
const stranger = signerFromSeed(new Uint8Array(32).fill(12));
const HEX = "c4".repeat(32);

function notarize(by: Ed25519Signer, at = new Date("2026-11-26T12:00:00Z")) {
  const request = parseNotarizationRequest(
    parseJson(`{"context_digest":"${HEX}","action":"summarise","metadata":{"n":1}}`),
  );
  return issueNotarization(request, by, { now: () => at });
}

interface Outcome {
  code: number;
  stdout: string;
  stderr: string;
  result: { valid?: boolean; errors?: string[] } | null;
}

async function run(argv: string[], env: Record<string, string> = {}): Promise<Outcome> {
  let stdout = "";
  let stderr = "";
  const code = await main(
    argv,
    {
      stdout: (text) => {
        stdout += text;
      },
      stderr: (text) => {
        stderr += text;
      },
    },
    env,
  );
  let result: Outcome["result"] = null;
  try {
    result = JSON.parse(stdout);
  } catch {}
  return { code, stdout, stderr, result };
}

describe("receiptd notarization verify", () => {
  let workDir: string;
  let files = 0;
  before(async () => {
    workDir = await mkdtemp(join(tmpdir(), "cli-notarization-"));
  });
  after(() => rm(workDir, { recursive: true, force: true }));

  async function file(content: string | Uint8Array): Promise<string> {
    const path = join(workDir, `file-${files++}.json`);
    await writeFile(path, content);
    return path;
  }
  const statementFile = (statement: JsonObject) => file(canonicalText(statement));

  test("a statement signed by the --key issuer is valid: exit 0 and the result as JSON", async () => {
    const issued = notarize(signer);
    const outcome = await run([
      "verify",
      await statementFile(issued.statement),
      "--key",
      signer.did,
    ]);
    assert.equal(outcome.code, 0, outcome.stderr);
    assert.deepEqual(outcome.result, {
      valid: true,
      errors: [],
      issuer: signer.did,
      issued_at: "2026-11-26T12:00:00Z",
      digest: issued.digest,
      digest_match: null,
    });
  });

  test("the stored document and POST /notarize's answer are read, their digest checked", async () => {
    const issued = notarize(signer);
    const document = await file(notarizationDocument(issued, "svc"));
    const answer = await file(dumpCompact(notarizationAnswer(issued, "svc")));
    for (const path of [document, answer]) {
      const outcome = await run(["verify", path, "--key", signer.did]);
      assert.equal(outcome.code, 0, outcome.stderr);
      assert.equal(outcome.stdout.includes('"digest_match": true'), true);
    }
    const wrong = parseJson(notarizationDocument(issued, "svc")) as JsonObject;
    wrong.set("notarization_digest", `sha256:${"00".repeat(32)}`);
    const outcome = await run(["verify", await file(dumpCompact(wrong)), "--key", signer.did]);
    assert.equal(outcome.code, 1);
    assert.deepEqual(outcome.result?.errors, ["digest_mismatch"]);
  });

  test("--expect-digest: hex of either case matches; another digest is exit 1", async () => {
    const issued = notarize(signer);
    const path = await statementFile(issued.statement);
    const hex = issued.digest.slice(7);
    const good = await run([
      "verify",
      path,
      "--key",
      signer.did,
      "--expect-digest",
      hex.toUpperCase(),
    ]);
    assert.equal(good.code, 0);
    const bad = await run(["verify", path, "--key", signer.did, "--expect-digest", HEX]);
    assert.equal(bad.code, 1);
    assert.deepEqual(bad.result?.errors, ["digest_mismatch"]);
  });

  test("tampered: exit 1 bad_signature; another issuer: exit 1 untrusted_issuer", async () => {
    const tampered = notarize(signer).statement;
    tampered.set("action", "delete everything");
    const broken = await run(["verify", await statementFile(tampered), "--key", signer.did]);
    assert.equal(broken.code, 1);
    assert.deepEqual(broken.result?.errors, ["bad_signature"]);
    const foreign = await run([
      "verify",
      await statementFile(notarize(stranger).statement),
      "--key",
      signer.did,
    ]);
    assert.equal(foreign.code, 1);
    assert.deepEqual(foreign.result?.errors, ["untrusted_issuer"]);
  });

  test("without --key: DATA_DIR's service key, and after rotate-key the retired one too", async () => {
    const dataDir = join(workDir, "data");
    const before = await loadOrCreateServiceKey(dataDir);
    let now = Date.parse("2026-11-26T12:00:00Z");
    const old = await statementFile(notarize(before, new Date(now)).statement);
    const env = { DATA_DIR: dataDir };
    assert.equal((await run(["verify", old], env)).code, 0);
    assert.equal(
      (await run(["verify", await statementFile(notarize(stranger).statement)], env)).code,
      1,
    );

    const store = new FsDocumentStore(dataDir);
    try {
      await rotateServiceKey(dataDir, store, {
        now: () => now,
        sleep: async (ms) => {
          now += ms;
        },
      });
    } finally {
      await store.close();
    }
    const after = await run(["verify", old], env);
    assert.equal(after.code, 0, after.stdout);
    // Signed by the retired key after its retirement: refused.
    const late = await statementFile(notarize(before, new Date(now + 60_000)).statement);
    const refused = await run(["verify", late], env);
    assert.equal(refused.code, 1);
    assert.deepEqual(refused.result?.errors, ["key_revoked"]);
  });

  test("a data directory with no service key is exit 2 with a hint to pass --key", async () => {
    const path = await statementFile(notarize(signer).statement);
    const outcome = await run(["verify", path], { DATA_DIR: join(workDir, "empty") });
    assert.equal(outcome.code, 2);
    assert.match(outcome.stderr, /no service key .* pass --key/);
  });

  test("unreadable input and usage errors are exit 2; --help is exit 0", async () => {
    const missing = await run(["verify", join(workDir, "absent.json"), "--key", signer.did]);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /^error: cannot read a notarization/);
    const notJson = await run(["verify", await file("{nope"), "--key", signer.did]);
    assert.equal(notJson.code, 2);
    for (const argv of [
      [],
      ["check", "x"],
      ["verify"],
      ["verify", "a", "b"],
      ["verify", "a", "--key", "did:key:nope"],
      ["verify", "a", "--bogus"],
    ]) {
      const outcome = await run(argv);
      assert.equal(outcome.code, 2, argv.join(" "));
      assert.match(outcome.stderr, /^error: .*\nusage: receiptd notarization verify/);
    }
    const help = await run(["--help"]);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /--expect-digest/);
  });

  test("a statement that is not an object is exit 1 not_an_object", async () => {
    const outcome = await run(["verify", await file("[1]"), "--key", signer.did]);
    assert.equal(outcome.code, 1);
    assert.deepEqual(outcome.result?.errors, ["not_an_object"]);
  });

  test("`receiptd notarization` runs it", async () => {
    const path = await statementFile(notarize(signer).statement);
    const child = spawnSync(
      process.execPath,
      ["--import", "tsx", RECEIPTD, "notarization", "verify", path, "--key", signer.did],
      { encoding: "utf8" },
    );
    assert.equal(child.status, 0, child.stderr);
    assert.equal(JSON.parse(child.stdout).valid, true);
  });
});

describe("receiptd notarization verify --revocations <service>/revocations/<did> (real HTTP)", () => {
  let service: TestService;
  let base: string;
  let workDir: string;
  before(async () => {
    workDir = await mkdtemp(join(tmpdir(), "cli-notarization-revocations-"));
    service = await startTestService({}, { anonymous: true });
    base = await service.app.listen({ port: 0, host: "127.0.0.1" });
  });
  after(async () => {
    await service.close();
    await rm(workDir, { recursive: true, force: true });
  });

  async function statementPath(by: Ed25519Signer, name: string): Promise<string> {
    const path = join(workDir, name);
    await writeFile(path, canonicalText(notarize(by).statement));
    return path;
  }

  test("an issuer that never rotated: the service's 404 no_document is an empty list", async () => {
    const answer = await fetch(`${base}/revocations/${signer.did}`);
    assert.equal(answer.status, 404);
    assert.deepEqual(await answer.json(), { error: "no_document" });
    const path = await statementPath(signer, "never-rotated.json");
    const outcome = await run([
      "verify",
      path,
      "--key",
      signer.did,
      "--revocations",
      `${base}/revocations/${signer.did}`,
    ]);
    assert.equal(outcome.code, 0, outcome.stderr);
    assert.equal(outcome.result?.valid, true);
    assert.equal(outcome.stderr, "");
  });

  test("an issuer with a served document is checked against it", async () => {
    const revoked = signerFromSeed(new Uint8Array(32).fill(13));
    const document = buildRevocationDocument([
      signRevocationStatement(revoked, { revokedAt: "2026-11-01T00:00:00Z", reason: "test" }),
    ]);
    const store = service.app.documentStore;
    const current = await store.get("revocations", revoked.did);
    assert.ok(
      await store.replace("revocations", revoked.did, current, Buffer.from(dumpCompact(document))),
    );
    const outcome = await run([
      "verify",
      await statementPath(revoked, "revoked.json"),
      "--key",
      revoked.did,
      "--revocations",
      `${base}/revocations/${revoked.did}`,
    ]);
    assert.equal(outcome.code, 1);
    assert.deepEqual(outcome.result?.errors, ["key_revoked"]);
  });

  test("a path the service does not serve, or no service, is still unreachable", async () => {
    const path = await statementPath(signer, "unreachable.json");
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const closedPort = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    for (const source of [
      `${base}/revocationz/${signer.did}`,
      `http://127.0.0.1:${closedPort}/revocations/${signer.did}`,
    ]) {
      const outcome = await run(["verify", path, "--key", signer.did, "--revocations", source]);
      assert.equal(outcome.code, 1, source);
      assert.deepEqual(outcome.result, { valid: false, errors: ["revocations_unreachable"] });
    }
  });
});
