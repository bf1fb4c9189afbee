/** `receiptd keys` as an operator runs it: a child process acting on DATA_DIR. */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { KeyStore } from "../../src/access/api-keys.js";
import { FsDocumentStore } from "../../src/storage/fs-document-store.js";

const RECEIPTD = fileURLToPath(new URL("../../src/cli/receiptd.ts", import.meta.url));

describe("receiptd keys", () => {
  let dataDir: string;
  let serverStore: FsDocumentStore;
  /** What a running server would hold: its own store object on the same DATA_DIR. */
  let server: KeyStore;
  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), "receiptd-cli-keys-"));
    serverStore = new FsDocumentStore(dataDir);
    server = new KeyStore(serverStore, { defaultDailyCap: 1000 });
  });
  after(async () => {
    await serverStore.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  function keys(args: string[], env: Record<string, string> = {}) {
    const result = spawnSync(process.execPath, ["--import", "tsx", RECEIPTD, "keys", ...args], {
      encoding: "utf8",
      env: { ...process.env, DATA_DIR: dataDir, KEY_DAILY_CAP: "", ...env },
    });
    return { status: result.status, stdout: result.stdout, stderr: result.stderr };
  }

  const created: { key: string; id: string }[] = [];

  test("create prints the key once with its id; the key works at once", async () => {
    const out = keys(["create", "--name", "acme", "--plan", "pro", "--cap", "5000"]);
    assert.equal(out.status, 0, out.stderr);
    const match =
      /^key: {7}(svc_[0-9a-f]{48})\nid: {8}([0-9a-f]{12})\nname: {6}acme\nplan: {6}pro\ndaily cap: 5000\nThe key is shown only now and cannot be recovered; store it safely\.\n$/.exec(
        out.stdout,
      );
    assert.ok(match, out.stdout);
    const [, key = "", id = ""] = match;
    created.push({ key, id });
    const auth = await server.authenticate(key);
    assert.equal(auth.ok && auth.key.id, id);
    assert.equal(auth.ok && auth.dailyCap, 5000);
  });

  test("create --json, with the default cap taken from KEY_DAILY_CAP", () => {
    const out = keys(["create", "--name", "beta", "--json"], { KEY_DAILY_CAP: "250" });
    assert.equal(out.status, 0, out.stderr);
    const body = JSON.parse(out.stdout);
    assert.deepEqual(Object.keys(body), [
      "key",
      "id",
      "name",
      "plan",
      "kind",
      "daily_cap",
      "effective_daily_cap",
      "created_at",
      "expires_at",
      "expired",
      "revoked_at",
    ]);
    assert.match(body.key, /^svc_[0-9a-f]{48}$/);
    assert.deepEqual(
      { ...body, key: undefined, id: undefined, created_at: undefined },
      {
        key: undefined,
        id: undefined,
        name: "beta",
        plan: "standard",
        kind: "standard",
        daily_cap: null,
        effective_daily_cap: 250,
        created_at: undefined,
        expires_at: null,
        expired: false,
        revoked_at: null,
      },
    );
    assert.match(body.created_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
    created.push({ key: body.key, id: body.id });
  });

  test("no file in DATA_DIR holds a key in clear", async () => {
    const entries = await readdir(dataDir, { withFileTypes: true, recursive: true });
    const files = entries
      .filter((entry) => entry.isFile())
      .map((entry) => join(entry.parentPath ?? entry.path, entry.name));
    assert.ok(files.length > 0);
    for (const file of files) {
      const content = await readFile(file, "latin1");
      for (const { key } of created) assert.equal(content.includes(key.slice(4)), false, file);
    }
  });

  test("a name in use is refused", () => {
    const out = keys(["create", "--name", "acme"]);
    assert.equal(out.status, 2);
    assert.match(out.stderr, /^error: a key named 'acme' exists \(id [0-9a-f]{12}\)\n$/);
  });

  test("list: a table and JSON, never the key", () => {
    const table = keys(["list"]);
    assert.equal(table.status, 0, table.stderr);
    const rows = table.stdout.trimEnd().split("\n");
    assert.match(
      rows[0] ?? "",
      /^ID {12}NAME {2}PLAN {6}KIND {6}DAILY CAP {7}CREATED {15}EXPIRES {2}REVOKED$/,
    );
    assert.equal(rows.length, 3);
    for (const { key, id } of created) {
      assert.equal(table.stdout.includes(key), false);
      assert.ok(rows.some((row) => row.startsWith(id)));
    }
    assert.match(table.stdout, /acme {2}pro {7}standard {2}5000 /);
    assert.match(table.stdout, /beta {2}standard {2}standard {2}1000 \(default\)/);

    const json = keys(["list", "--json"], { KEY_DAILY_CAP: "300" });
    assert.equal(json.status, 0);
    const listed = JSON.parse(json.stdout) as Record<string, unknown>[];
    assert.deepEqual(
      listed.map((key) => [key.name, key.daily_cap, key.effective_daily_cap, key.revoked_at]),
      [
        ["acme", 5000, 5000, null],
        ["beta", null, 300, null],
      ],
    );
    assert.equal(json.stdout.includes("svc_"), false);
  });

  test("list marks evaluation keys with their expiry; expired ones only with --all", async () => {
    // One issued two days ago for a day (expired), one issued now (the server's clock).
    const past = new KeyStore(serverStore, {
      defaultDailyCap: 1000,
      now: () => Date.now() - 2 * 86_400_000,
    });
    const expired = await past.createEvaluation({ dailyCap: 50, lifetimeMs: 86_400_000 });
    const live = await server.createEvaluation({ dailyCap: 50, lifetimeMs: 86_400_000 });

    // By default an expired evaluation key is left out, and a line says so.
    const current = keys(["list"]);
    assert.equal(current.status, 0, current.stderr);
    assert.equal(current.stdout.includes(expired.record.id), false);
    assert.ok(current.stdout.includes(live.record.id));
    assert.match(current.stdout, /\n1 expired evaluation key\(s\) not shown; --all lists them\n$/);
    const currentJson = JSON.parse(keys(["list", "--json"]).stdout) as { id: string }[];
    assert.equal(
      currentJson.some((key) => key.id === expired.record.id),
      false,
    );

    const table = keys(["list", "--all"]);
    assert.equal(table.status, 0, table.stderr);
    assert.equal(table.stdout.includes("not shown"), false);
    const rowOf = (id: string) => table.stdout.split("\n").find((row) => row.startsWith(id)) ?? "";
    const expiredRow = rowOf(expired.record.id);
    const liveRow = rowOf(live.record.id);
    assert.match(
      expiredRow,
      new RegExp(
        `^${expired.record.id} {2}evaluation-${expired.record.id} {2}evaluation {2}evaluation {2}50 +\\S+Z {2}${expired.record.expiresAt} \\(expired\\) {2}-$`,
      ),
    );
    assert.match(
      liveRow,
      new RegExp(`evaluation {2}evaluation {2}50 +\\S+Z {2}${live.record.expiresAt} +-$`),
    );
    for (const { key } of [expired, live]) assert.equal(table.stdout.includes(key), false);

    const listed = JSON.parse(keys(["list", "--json", "--all"]).stdout) as Record<
      string,
      unknown
    >[];
    const evaluation = listed.filter((key) => key.kind === "evaluation");
    assert.deepEqual(
      evaluation.map((key) => [key.name, key.plan, key.daily_cap, key.expires_at, key.expired]),
      [
        [expired.record.name, "evaluation", 50, expired.record.expiresAt, true],
        [live.record.name, "evaluation", 50, live.record.expiresAt, false],
      ],
    );
    assert.ok(
      listed.filter((key) => key.kind === "standard").every((key) => key.expires_at === null),
    );
  });

  test("revoke by name and by key; the server refuses them afterwards", async () => {
    const [acme, beta] = created;
    assert.ok(acme && beta);
    const byName = keys(["revoke", "acme"]);
    assert.equal(byName.status, 0, byName.stderr);
    assert.match(byName.stdout, new RegExp(`^revoked key ${acme.id} \\(acme\\) at \\S+Z\\n$`));
    assert.deepEqual(await server.authenticate(acme.key), {
      ok: false,
      error: "invalid_key",
      cause: "revoked",
    });

    const byKey = keys(["revoke", beta.key]);
    assert.equal(byKey.status, 0, byKey.stderr);
    assert.equal((await server.authenticate(beta.key)).ok, false);

    const again = keys(["revoke", beta.key]);
    assert.equal(again.status, 0);
    assert.match(again.stdout, /was already revoked at/);

    const listed = JSON.parse(keys(["list", "--json"]).stdout) as {
      kind: string;
      revoked_at: unknown;
    }[];
    const standard = listed.filter((key) => key.kind === "standard");
    assert.equal(standard.length, 2);
    for (const key of standard) assert.match(String(key.revoked_at), /Z$/);
  });

  test("revoking what does not exist exits 1", () => {
    for (const target of ["acme", "nobody", `svc_${"0".repeat(48)}`]) {
      const out = keys(["revoke", target]);
      assert.equal(out.status, 1, target);
      assert.equal(out.stderr, "error: no such key, and no unrevoked key with that name\n");
    }
  });

  test("usage errors exit 2", () => {
    for (const args of [
      [],
      ["rotate"],
      ["create"],
      ["create", "--name", "x", "--cap", "lots"],
      ["create", "--name", "bad name"],
      ["revoke", "a", "b"],
    ]) {
      const out = keys(args);
      assert.equal(out.status, 2, args.join(" "));
      assert.match(out.stderr, /error|usage/, args.join(" "));
    }
    const help = keys(["--help"]);
    assert.equal(help.status, 0);
    assert.match(help.stdout, /^usage: receiptd keys create/);
  });
});
