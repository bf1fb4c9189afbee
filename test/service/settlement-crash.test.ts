/**
 * kill -9 of an embedded `receiptd serve` at each step of a paid call (issue 24, finding 3):
 * before `/settle`, after the facilitator settled but before receiptd heard of it, just after
 * the settlement answer reached receiptd (its journal write and answer under way), and after
 * the client got its paid answer. After each restart, every payment the facilitator settled
 * must have its receipt at `GET /receipts/{tx}`: the intent journaled before `/settle` is
 * reconciled at start by asking the facilitator stand-in (`/authorization-state`).
 *
 * The facilitator stand-in runs in this test behind a small forwarding proxy that kills the
 * server at the chosen step. Real processes and sockets throughout.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { readdir, rm } from "node:fs/promises";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import type { PrivateKeyAccount } from "viem/accounts";
import { type FacilitatorPeer, startFacilitatorPeer } from "../../src/payments/facilitator-peer.js";
import { authorizationState, PAY_TO, paymentFor, wallet } from "../payments/support.js";
import { corpusBytes } from "../support/corpus.js";
import {
  type ServerProcess,
  startServerProcess,
  stopServerProcess,
} from "./support/server-process.js";
import { temporaryDataDir } from "./support/service.js";

const GOOD = corpusBytes("vectors/01_happy_minimal.json");
const _NETWORK = "eip155:8453";

type Step = "pass" | "before settle" | "after settle" | "after the settle answer" | "after answer";

async function body(request: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

describe("kill -9 at each step of a settlement", () => {
  let dataDir: string;
  let peer: FacilitatorPeer;
  let proxy: Server;
  let proxyUrl: string;
  let server: ServerProcess;
  let step: Step = "pass";
  const payer: PrivateKeyAccount = wallet();

  const env = () => ({
    DATA_DIR: dataDir,
    CPU_THREADS: "1",
    X402_PAY_TO: PAY_TO,
    FACILITATOR_URL: proxyUrl,
  });

  const kill = async () => {
    const exited = once(server.child, "exit");
    server.child.kill("SIGKILL");
    await exited;
  };

  /** Forwards to the stand-in; on `/settle` kills the server where `step` says. */
  const forward = async (request: IncomingMessage, response: ServerResponse) => {
    const bytes = await body(request);
    const settle = request.url?.startsWith("/settle") === true;
    if (settle && step === "before settle") {
      await kill();
      response.destroy();
      return;
    }
    const answer = await fetch(`${peer.url}${request.url ?? "/"}`, {
      method: request.method,
      headers: { "content-type": "application/json" },
      body: request.method === "POST" ? bytes : undefined,
    });
    const text = Buffer.from(await answer.arrayBuffer());
    if (settle && step === "after settle") {
      await kill();
      response.destroy();
      return;
    }
    response.writeHead(answer.status, { "content-type": "application/json" }).end(text);
    if (settle && step === "after the settle answer") setImmediate(() => void kill());
  };

  before(async () => {
    dataDir = await temporaryDataDir();
    peer = await startFacilitatorPeer();
    proxy = createServer((request, response) => {
      forward(request, response).catch(() => response.destroy());
    });
    proxy.listen(0, "127.0.0.1");
    await once(proxy, "listening");
    proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    server = await startServerProcess(env());
  });
  after(async () => {
    await stopServerProcess(server);
    proxy.close();
    proxy.closeAllConnections();
    await peer.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  /** A signed payment for `POST /verify`, and the transaction the stand-in will name. */
  async function payment(): Promise<{ header: string; tx: string }> {
    const paid = await paymentFor(server.base, payer, GOOD);
    assert.ok(paid !== null, "POST /verify without a key asks for a payment");
    return paid;
  }

  /** The receipt's status, polled while a restarted server reconciles (bounded). */
  async function receiptStatus(tx: string): Promise<number> {
    let status = 0;
    for (let attempt = 0; attempt < 100; attempt += 1) {
      const answer = await fetch(`${server.base}/receipts/${tx}`);
      await answer.arrayBuffer();
      status = answer.status;
      if (status === 200) break;
      await sleep(100);
    }
    return status;
  }

  const settledAtPeer = async (tx: string, header: string): Promise<boolean> => {
    // The stand-in's own answer: a settled authorization declines a second /verify.
    const state = await authorizationState(peer.url, header);
    if (state.settled) assert.equal(state.transaction, tx);
    return state.settled;
  };

  test("no settled payment ends without a receipt", async () => {
    const steps: Step[] = [
      "before settle",
      "after settle",
      "after the settle answer",
      "after answer",
    ];
    const report: Record<string, string> = {};
    let lost = 0;
    for (const current of steps) {
      const { header, tx } = await payment();
      step = current;
      const paid = await fetch(`${server.base}/verify`, {
        method: "POST",
        headers: { "payment-signature": header },
        body: GOOD,
      }).then(
        async (answer) => {
          await answer.arrayBuffer();
          return String(answer.status);
        },
        () => "no answer",
      );
      if (current === "after answer") await kill();
      if (server.child.exitCode === null && server.child.signalCode === null) await kill();
      step = "pass";
      server = await startServerProcess(env());
      const settled = await settledAtPeer(tx, header);
      const receipt = settled ? await receiptStatus(tx) : 404;
      if (settled && receipt !== 200) lost += 1;
      report[current] = `client ${paid}, settled ${settled}, receipt ${receipt}`;
    }
    process.stdout.write(`# settlement crash steps: ${JSON.stringify(report)}\n`);
    assert.equal(lost, 0, JSON.stringify(report));
    assert.equal(report["before settle"], "client no answer, settled false, receipt 404");
    for (const current of steps.slice(1)) assert.match(report[current] ?? "", /receipt 200$/);
    // The unsettled intent stays journaled (its authorization is still valid): an operator
    // can see it; it is dropped once it can no longer settle.
    const intents = await readdir(join(dataDir, "journal", "settlement-intents"));
    assert.equal(intents.filter((name) => name.endsWith(".json")).length, 1);
  });
});
