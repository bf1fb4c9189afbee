/**
 * Issue 14: a key created in another DATA_DIR than the server's got 401 with no hint why.
 * `receiptd keys create` now says on stderr which DATA_DIR it used and whether a server runs on
 * it (DATA_DIR/server.json, written by `receiptd serve`), and with RECEIPTD_URL compares that
 * server's issuer with DATA_DIR's service key. Real processes and a real HTTP socket.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { writeServerFile } from "../../src/service/server-file.js";
import { loadOrCreateServiceKey } from "../../src/service/service-key.js";

const RECEIPTD = fileURLToPath(new URL("../../src/cli/receiptd.ts", import.meta.url));
function run(args: string[], env: NodeJS.ProcessEnv): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, args, { env }, (error, stdout, stderr) => {
      if (error) reject(error);
      else resolve({ stdout, stderr });
    });
  });
}

describe("receiptd keys create: which DATA_DIR, and is a server on it", () => {
  let dataDir: string;
  let issuer: string;
  let info: Server;
  let infoUrl: string;
  let answeredIssuer = "";
  let names = 0;

  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), "receiptd-keys-data-dir-"));
    issuer = (await loadOrCreateServiceKey(dataDir)).did;
    // Stands for the server at RECEIPTD_URL: only its GET /info matters here.
    info = createServer((request, response) => {
      response.setHeader("content-type", "application/json");
      response.end(request.url === "/info" ? JSON.stringify({ issuer: answeredIssuer }) : "{}");
    });
    info.listen(0, "127.0.0.1");
    await once(info, "listening");
    const address = info.address();
    assert.ok(address !== null && typeof address === "object");
    infoUrl = `http://127.0.0.1:${address.port}`;
  });
  after(async () => {
    info.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  async function create(env: Record<string, string> = {}) {
    names += 1;
    const { stdout, stderr } = await run(
      ["--import", "tsx", RECEIPTD, "keys", "create", "--name", `k${names}`, "--key-only"],
      { ...process.env, DATA_DIR: dataDir, DATABASE_URL: "", RECEIPTD_URL: "", ...env },
    );
    assert.match(stdout, /^svc_[0-9a-f]{48}\n$/, "--key-only prints the key alone");
    return stderr.split("\n").filter((line) => line !== "");
  }

  test("no server has started on it: the DATA_DIR and a warning", async () => {
    const lines = await create();
    assert.equal(lines[0], `DATA_DIR: ${dataDir}`);
    assert.match(lines[1] ?? "", /^warning: no receiptd serve is running on this DATA_DIR .*401/);
  });

  test("a server whose process is gone: still a warning", async () => {
    // A pid far above any pid_max in use names no process.
    await writeServerFile(dataDir, {
      url: "http://127.0.0.1:9",
      pid: 2 ** 30,
      hostname: hostname(),
      started_at: new Date().toISOString(),
      issuer,
      mode: "embedded",
    });
    const lines = await create();
    assert.match(lines[1] ?? "", /^warning: .*pid 1073741824 has exited/);
  });

  test("a running server: named, no warning; RECEIPTD_URL with the same issuer agrees", async () => {
    await writeServerFile(dataDir, {
      url: "http://127.0.0.1:8080",
      pid: process.pid,
      hostname: hostname(),
      started_at: new Date().toISOString(),
      issuer,
      mode: "embedded",
    });
    answeredIssuer = issuer;
    const lines = await create({ RECEIPTD_URL: infoUrl });
    assert.deepEqual(lines, [
      `DATA_DIR: ${dataDir}`,
      `server: http://127.0.0.1:8080 (pid ${process.pid}) runs on this DATA_DIR`,
      `server: ${infoUrl} signs with this DATA_DIR's service key`,
    ]);
  });

  test("RECEIPTD_URL signing with another key: a warning naming both issuers", async () => {
    answeredIssuer = "did:key:z6MkotherIssuerOfAnotherDataDir";
    const lines = await create({ RECEIPTD_URL: infoUrl });
    assert.match(
      lines.at(-1) ?? "",
      new RegExp(
        `^warning: the server at RECEIPTD_URL ${infoUrl} signs as ${answeredIssuer}, but this DATA_DIR's service key is ${issuer}`,
      ),
    );
  });

  test("RECEIPTD_URL that does not answer: a warning, and the key is still made", async () => {
    info.close();
    const lines = await create({ RECEIPTD_URL: infoUrl });
    assert.match(
      lines.at(-1) ?? "",
      new RegExp(`^warning: cannot check RECEIPTD_URL ${infoUrl}: `),
    );
  });
});
