/**
 * Embedded state across a kill -9 and a restart (issue 24, finding 4): the spent-challenge
 * ledger, the evaluation keys' per-address limit and an API key's daily cap are journaled under
 * DATA_DIR/state, so a restarted `receiptd serve` refuses what the killed one had used up.
 * Over real sockets, with the server as a child process.
 */
import assert from "node:assert/strict";
import { rm } from "node:fs/promises";
import { after, before, describe, test } from "node:test";
import { KeyStore } from "../../src/access/api-keys.js";
import { nodeSha256 } from "../../src/access/evaluation/node-sha256.js";
import { solveProofOfWork } from "../../src/portable/proof-of-work.js";
import { FsDocumentStore } from "../../src/storage/fs-document-store.js";
import { corpusBytes } from "../support/corpus.js";
import {
  type ServerProcess,
  startServerProcess,
  stopServerProcess,
} from "./support/server-process.js";
import { temporaryDataDir } from "./support/service.js";

const GOOD = corpusBytes("vectors/01_happy_minimal.json");

describe("embedded state survives kill -9", () => {
  let dataDir: string;
  let server: ServerProcess;
  let key: string;
  const env = () => ({
    DATA_DIR: dataDir,
    CPU_THREADS: "1",
    EVALUATION_POW_BITS: "4",
    EVALUATION_KEYS_PER_ADDRESS: "2",
  });

  before(async () => {
    dataDir = await temporaryDataDir();
    const keys = new KeyStore(new FsDocumentStore(dataDir), { defaultDailyCap: 1000 });
    key = (await keys.create({ name: "restart", dailyCap: 2 })).key;
    server = await startServerProcess(env());
  });
  after(async () => {
    await stopServerProcess(server);
    await rm(dataDir, { recursive: true, force: true });
  });

  async function restartAfterKill(): Promise<void> {
    const exited = new Promise((resolve) => server.child.once("exit", resolve));
    server.child.kill("SIGKILL");
    await exited;
    server = await startServerProcess(env());
  }

  async function solvedChallenge(): Promise<string> {
    const answer = await fetch(`${server.base}/keys/evaluation/challenge`);
    const { challenge, difficulty } = (await answer.json()) as {
      challenge: string;
      difficulty: number;
    };
    return JSON.stringify({
      challenge,
      nonce: solveProofOfWork(nodeSha256, challenge, difficulty),
    });
  }

  const issue = async (body: string) => {
    const answer = await fetch(`${server.base}/keys/evaluation`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
    });
    const json = (await answer.json()) as { error?: string };
    return `${answer.status}${json.error === undefined ? "" : ` ${json.error}`}`;
  };
  const verify = async () => {
    const answer = await fetch(`${server.base}/verify`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-svc-key": key },
      body: GOOD,
    });
    await answer.arrayBuffer();
    return answer.status;
  };

  test("a spent challenge, the per-address limit and a daily cap are remembered", async () => {
    const first = await solvedChallenge();
    assert.equal(await issue(first), "201");
    assert.equal(await verify(), 200);
    await restartAfterKill();

    assert.equal(await issue(first), "409 challenge_already_used");
    assert.equal(await issue(await solvedChallenge()), "201");
    const third = await solvedChallenge();
    assert.equal(await issue(third), "429 evaluation_limit_reached");
    assert.equal(await verify(), 200);
    await restartAfterKill();

    assert.equal(await issue(await solvedChallenge()), "429 evaluation_limit_reached");
    assert.equal(await verify(), 429);
  });
});
