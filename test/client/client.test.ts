/**
 * `receiptd/client` against the real server (a child process) over 127.0.0.1: a paid bulk
 * run whose first paid answer is lost with its connection is charged once per batch (counted
 * at the facilitator, where settlements happen); batches in completion order; a verification
 * receipt checked offline in one call; typed errors with the service's codes; and the retry
 * arithmetic (Retry-After, RateLimit, the cap).
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { once } from "node:events";
import { rm } from "node:fs/promises";
import { createServer, request as httpRequest, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import {
  checkVerificationReceipt,
  createClient,
  isReceiptdError,
  type ReceiptdClient,
  x402ExactPayer,
} from "../../src/client/index.js";
import {
  rateLimitResetMs,
  retryAfterMs,
  retryDelayMs,
  retryPolicy,
} from "../../src/client/retry.js";
import { startFacilitatorPeer } from "../../src/payments/facilitator-peer.js";
import { PAY_TO, wallet } from "../payments/support.js";
import {
  type ServerProcess,
  startServerProcess,
  stopServerProcess,
} from "../service/support/server-process.js";
import { temporaryDataDir } from "../service/support/service.js";
import { corpusBytes } from "../support/corpus.js";

const run = promisify(execFile);
const RECEIPTD = fileURLToPath(new URL("../../src/cli/receiptd.ts", import.meta.url));
const GOOD = corpusBytes("vectors/01_happy_minimal.json");
const BAD = corpusBytes("vectors/03_tampered_body.json");

interface Peer {
  url: string;
  close(): Promise<void>;
}

async function listen(server: ReturnType<typeof createServer>): Promise<string> {
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function closer(server: ReturnType<typeof createServer>): () => Promise<void> {
  return () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
}

async function body(incoming: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of incoming) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/**
 * Passes requests to `target`; `decide` sees each answer and may drop the client's connection
 * instead of passing it on (the answer was produced, the client never gets it).
 */
async function forwardingPeer(
  target: string,
  decide: (
    request: IncomingMessage,
    status: number,
    headers: Record<string, unknown>,
  ) => "pass" | "drop",
): Promise<Peer> {
  const origin = new URL(target);
  const server = createServer(async (incoming, outgoing) => {
    const sent = await body(incoming);
    const forward = httpRequest(
      {
        host: origin.hostname,
        port: origin.port,
        method: incoming.method,
        path: incoming.url,
        headers: incoming.headers,
      },
      async (answer) => {
        const received = await body(answer);
        if (decide(incoming, answer.statusCode ?? 0, answer.headers) === "drop") {
          outgoing.socket?.destroy();
          return;
        }
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        outgoing.end(received);
      },
    );
    forward.end(sent);
  });
  return { url: await listen(server), close: closer(server) };
}

describe("receiptd/client against a real server", () => {
  let dataDir: string;
  let server: ServerProcess;
  let facilitator: Awaited<ReturnType<typeof startFacilitatorPeer>>;
  let facilitatorFront: Peer;
  let settlements = 0;
  let key: string;

  before(async () => {
    dataDir = await temporaryDataDir();
    facilitator = await startFacilitatorPeer();
    // Settlements are counted where they happen: a 200 from the facilitator's /settle.
    facilitatorFront = await forwardingPeer(facilitator.url, (request, status) => {
      if (request.url === "/settle" && status === 200) settlements += 1;
      return "pass";
    });
    const created = await run(
      process.execPath,
      ["--import", "tsx", RECEIPTD, "keys", "create", "--name", "client", "--key-only"],
      { env: { ...process.env, DATA_DIR: dataDir } },
    );
    key = created.stdout.trim();
    server = await startServerProcess({
      DATA_DIR: dataDir,
      X402_PAY_TO: PAY_TO,
      FACILITATOR_URL: facilitatorFront.url,
      PUBLIC_BASE_URL: "https://receiptd.example",
    });
  });
  after(async () => {
    await stopServerProcess(server);
    await facilitatorFront.close();
    await facilitator.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  test("a paid bulk run retried after a dropped connection is charged once per batch", {
    timeout: 120_000,
  }, async () => {
    let dropped = 0;
    let replayed = 0;
    const front = await forwardingPeer(server.base, (request, status, headers) => {
      if (headers["idempotent-replayed"] === "true") replayed += 1;
      if (request.headers["payment-signature"] !== undefined && status === 200 && dropped === 0) {
        dropped += 1;
        return "drop";
      }
      return "pass";
    });
    const client = createClient({ baseUrl: front.url, payment: x402ExactPayer(wallet()) });
    try {
      const before = settlements;
      // 60 bundles: two batches of the service's max_batch (50) and 10.
      const bundles = Array.from({ length: 60 }, (_, at) => (at % 3 === 0 ? BAD : GOOD));
      const verdicts: string[] = [];
      for await (const outcome of client.verifyMany(bundles, { concurrency: 1 })) {
        assert.equal(outcome.error, null);
        verdicts.push(String(outcome.result?.verdict));
      }
      assert.deepEqual(
        verdicts,
        bundles.map((bundle) => (bundle === BAD ? "UNTRUSTED" : "TRUSTED")),
      );
      assert.equal(dropped, 1);
      assert.equal(replayed, 1, "the retry got the first answer again");
      assert.equal(settlements - before, 2, "two batches, two settlements");
    } finally {
      await client.close();
      await front.close();
    }
  });

  test("without a payment hook, a keyless call fails with the service's code", async () => {
    const client = createClient({ baseUrl: server.base });
    try {
      await assert.rejects(client.verify(GOOD), (error: unknown) => {
        assert.ok(isReceiptdError(error));
        assert.equal(error.code, "payment_required");
        assert.equal(error.status, 402);
        return true;
      });
    } finally {
      await client.close();
    }
  });

  test("results in completion order cover every input once", { timeout: 60_000 }, async () => {
    const client: ReceiptdClient = createClient({ baseUrl: server.base, apiKey: key });
    try {
      async function* endless() {
        for (let at = 0; at < 130; at += 1) yield at % 2 === 0 ? GOOD : "not json";
      }
      const seen: number[] = [];
      for await (const outcome of client.verifyMany(endless(), {
        order: "completion",
        concurrency: 3,
      })) {
        seen.push(outcome.index);
        if (outcome.index % 2 === 0) assert.equal(outcome.result?.verdict, "TRUSTED");
        else assert.equal(outcome.error?.code, "bundle_not_json");
      }
      assert.deepEqual(
        [...seen].sort((a, b) => a - b),
        Array.from({ length: 130 }, (_, at) => at),
      );
    } finally {
      await client.close();
    }
  });

  test("a verification receipt is checked offline in one call", async () => {
    const client = createClient({ baseUrl: server.base, apiKey: key });
    try {
      const result = await client.verify(GOOD, { receipt: true });
      const receipt = result.verification_receipt;
      assert.ok(receipt !== undefined);
      const check = await client.checkReceipt(receipt, { bundle: GOOD });
      assert.equal(check.valid, true, JSON.stringify(check.errors));
      assert.equal(check.digest_match, true);
      assert.equal(check.issuer_expected, true);
      const otherBundle = await client.checkReceipt(receipt, { bundle: BAD });
      assert.equal(otherBundle.digest_match, false);
      const tampered = checkVerificationReceipt({ ...receipt, verdict: "UNTRUSTED" });
      assert.equal(tampered.valid, false);
      const stranger = checkVerificationReceipt(receipt, { issuer: "did:key:z6Mk-someone-else" });
      assert.equal(stranger.valid, false);
      assert.equal(stranger.issuer_expected, false);
      // The service's own check agrees.
      const remote = await client.verifyReceipt(receipt, { bundle: GOOD });
      assert.equal(remote.valid, true);
      assert.equal(remote.digest_match, true);
    } finally {
      await client.close();
    }
  });
});

describe("retry arithmetic", () => {
  test("Retry-After in seconds or as a date; RateLimit t only when r is 0", () => {
    assert.equal(retryAfterMs("3"), 3000);
    assert.equal(retryAfterMs(new Date(10_000).toUTCString(), 4_000), 6000);
    assert.equal(retryAfterMs("soon"), undefined);
    assert.equal(retryAfterMs(undefined), undefined);
    assert.equal(rateLimitResetMs('"key";r=0;t=42'), 42_000);
    assert.equal(rateLimitResetMs('"key";r=5;t=42'), undefined);
  });

  test("a hint is followed with up to a fifth of jitter; past the cap it is not waited", () => {
    const policy = retryPolicy({ maxDelayMs: 5_000, baseDelayMs: 100 });
    assert.equal(
      retryDelayMs(policy, 0, 1_000, () => 0),
      1_000,
    );
    assert.equal(
      retryDelayMs(policy, 0, 1_000, () => 1),
      1_200,
    );
    assert.equal(
      retryDelayMs(policy, 0, 86_400_000, () => 0.5),
      null,
    );
    // Without a hint: full jitter under an exponential ceiling, itself capped.
    assert.equal(
      retryDelayMs(policy, 3, undefined, () => 1),
      800,
    );
    assert.equal(
      retryDelayMs(policy, 20, undefined, () => 1),
      5_000,
    );
  });
});
