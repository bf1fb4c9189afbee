/**
 * Restart safety of anchor hosting: the real server (a child process) is killed with SIGKILL
 * while anchor posts are in flight and restarted on the same DATA_DIR. Every post that was
 * acknowledged with 200 must be served back whole, and nothing under DATA_DIR/store may be
 * half-written (temporary files may remain, but are never served).
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { readdir, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { pendingProof, sha256 } from "../../../../bench/support/ots.js";
import { KeyStore } from "../../../../src/access/api-keys.js";
import { FsDocumentStore } from "../../../../src/storage/fs-document-store.js";
import { type ServerProcess, startServerProcess } from "../../support/server-process.js";
import { temporaryDataDir } from "../../support/service.js";

const POSTS = 200;
/** Acknowledgements to wait for before the kill; the other posts are still in flight. */
const ACKS_BEFORE_KILL = 10;

function startServer(dataDir: string): Promise<ServerProcess> {
  return startServerProcess({
    DATA_DIR: dataDir,
    CPU_THREADS: "1",
    // Room for every concurrent post, so none is shed as `overloaded`.
    CPU_MAX_QUEUE: String(POSTS),
  });
}

interface Posted {
  digest: string;
  proof: string;
  note: string;
  /** The 200 body, when the post was acknowledged. */
  acknowledged?: { stored: boolean; digest: string; status: string; bytes: number };
}

/** Every file in the directory tree, as paths. */
async function filesUnder(directory: string): Promise<string[]> {
  const entries = await readdir(directory, { withFileTypes: true, recursive: true });
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name));
}

describe("anchors survive a crash", () => {
  let dataDir: string;
  before(async () => {
    dataDir = await temporaryDataDir();
  });
  after(() => rm(dataDir, { recursive: true, force: true }));

  test("kill -9 during posts: acknowledged anchors are intact after a restart", {
    timeout: 120_000,
  }, async () => {
    const posts: Posted[] = Array.from({ length: POSTS }, (_, index) => {
      const digest = sha256(`restart-safety document ${index}`);
      return {
        digest: `sha256:${digest.toString("hex")}`,
        proof: pendingProof(digest).toString("base64"),
        note: `document ${index}`,
      };
    });

    // Posting anchors is keyed: a key made the way `receiptd keys create` makes it.
    const store = new FsDocumentStore(dataDir);
    const { key } = await new KeyStore(store, { defaultDailyCap: 1000 }).create({ name: "ci" });
    await store.close();
    const headers = { "content-type": "application/json", "x-svc-key": key };

    const first = await startServer(dataDir);
    const exited = once(first.child, "exit");
    let acknowledgements = 0;
    const requests = posts.map(async (post) => {
      const response = await fetch(`${first.base}/anchors`, {
        method: "POST",
        headers,
        body: JSON.stringify({ digest: post.digest, proof: post.proof, note: post.note }),
      });
      const body = await response.json();
      assert.equal(response.status, 200, JSON.stringify(body));
      post.acknowledged = body as Posted["acknowledged"];
      acknowledgements += 1;
      if (acknowledgements === ACKS_BEFORE_KILL) first.child.kill("SIGKILL");
    });
    const settled = await Promise.allSettled(requests);
    if (acknowledgements < ACKS_BEFORE_KILL) {
      // Refused posts (a rejected assertion above) never trigger the kill: fail, not hang.
      first.child.kill("SIGKILL");
      const refused = settled.find((outcome) => outcome.status === "rejected");
      assert.fail(`only ${acknowledgements} posts acknowledged: ${String(refused?.reason)}`);
    }
    const [, signal] = await exited;
    assert.equal(signal, "SIGKILL");
    // Posts cut off by the kill fail at the connection, never with an HTTP error.
    for (const outcome of settled) {
      if (outcome.status === "rejected") assert.ok(outcome.reason instanceof TypeError);
    }
    const acknowledged = posts.filter((post) => post.acknowledged !== undefined);
    assert.ok(acknowledged.length >= ACKS_BEFORE_KILL);
    assert.ok(acknowledged.length < POSTS, "the kill came while posts were still in flight");

    // Whatever is on disk is whole: every document parses; temporary files are allowed.
    const storeFiles = await filesUnder(join(dataDir, "store"));
    const documents = new Map<string, Buffer>();
    for (const path of storeFiles) {
      if (path.endsWith(".tmp")) continue;
      assert.ok(path.endsWith(".json"), path);
      const bytes = await readFile(path);
      const document = JSON.parse(bytes.toString("utf8")) as { digest: string };
      documents.set(document.digest, bytes);
    }

    const second = await startServer(dataDir);
    try {
      // Read with the key: up to 200 keyless reads of anchors that are not there would meet
      // the per-address bucket of uncharged refusals (60) long before the end.
      for (const post of posts) {
        const response = await fetch(`${second.base}/anchors/${post.digest}`, {
          headers: { "x-svc-key": key },
        });
        const onDisk = documents.get(post.digest);
        if (onDisk === undefined) {
          assert.equal(post.acknowledged, undefined, `acknowledged ${post.digest} was lost`);
          assert.equal(response.status, 404);
          await response.body?.cancel();
          continue;
        }
        assert.equal(response.status, 200);
        const served = Buffer.from(await response.arrayBuffer());
        assert.ok(served.equals(onDisk), "the served bytes are the document file's");
        const document = JSON.parse(served.toString("utf8"));
        assert.deepEqual(
          { digest: document.digest, proof: document.proof, note: document.note },
          { digest: post.digest, proof: post.proof, note: post.note },
        );
        if (post.acknowledged !== undefined) {
          assert.deepEqual(post.acknowledged, {
            stored: true,
            digest: post.digest,
            status: document.status,
            bytes: Buffer.from(post.proof, "base64").length,
            outcome: "created",
          });
        }
      }
      // The restarted service carries on: a post cut off by the crash can be made again.
      const retried = posts.find((post) => post.acknowledged === undefined)!;
      const response = await fetch(`${second.base}/anchors`, {
        method: "POST",
        headers,
        body: JSON.stringify({ digest: retried.digest, proof: retried.proof, note: retried.note }),
      });
      assert.equal(response.status, 200);
      assert.equal(((await response.json()) as { stored: boolean }).stored, true);
    } finally {
      const stopped = once(second.child, "exit");
      second.child.kill("SIGTERM");
      assert.deepEqual(await stopped, [0, null]);
    }
  });
});
