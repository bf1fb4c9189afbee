/**
 * Limits meant per client hold across web processes (issue 34, finding 6), over real sockets:
 * two `receiptd serve` processes on one private Redis and one PostgreSQL schema, sharing the
 * deployment's internal token (so one address has one name in both). The report saw 42
 * signatures checked for one address over two webs where one allows 20, and one key holding 8
 * crystal uploads where `CRYSTAL_UPLOADS_PER_KEY` is 4.
 */
import assert from "node:assert/strict";
import { rm } from "node:fs/promises";
import { request as httpRequest } from "node:http";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { PrivateKeyAccount } from "viem/accounts";
import { KeyStore } from "../../src/access/api-keys.js";
import { startFacilitatorPeer } from "../../src/payments/facilitator-peer.js";
import { requirementFromWire } from "../../src/payments/requirements.js";
import type { DocumentStore } from "../../src/storage/document-store.js";
import { openDocumentStore } from "../../src/storage/open.js";
import { fromPlain, isObject, type JsonObject } from "../../src/verifier/json/value.js";
import {
  fromHeader,
  PAY_TO,
  signAuthorization,
  toHeader,
  v2Payment,
  wallet,
} from "../payments/support.js";
import {
  keysUnder,
  openTestRedis,
  type PrivateRedis,
  randomPrefix,
  startPrivateRedis,
} from "../redis/support.js";
import { RawClient, until } from "../service/support/raw-client.js";
import {
  type ServerProcess,
  startServerProcess,
  stopServerProcess,
} from "../service/support/server-process.js";
import { temporaryDataDir } from "../service/support/service.js";
import { corpusBytes } from "../support/corpus.js";
import { DATABASE_URL, dropSchema, privateSchema } from "../support/pg.js";

const GOOD = corpusBytes("vectors/01_happy_minimal.json");
/** Signature checks per second per address; an address may burst to twice as many. */
const PER_ADDRESS = 1;
const UPLOADS_PER_KEY = 4;

describe("per-client limits across two web processes", () => {
  let redis: PrivateRedis;
  const prefix = randomPrefix();
  const schema = privateSchema();
  let peer: Awaited<ReturnType<typeof startFacilitatorPeer>>;
  let store: DocumentStore;
  const dataDirs: string[] = [];
  const webs: ServerProcess[] = [];
  let key: string;

  before(async () => {
    redis = await startPrivateRedis();
    peer = await startFacilitatorPeer();
    const shared = await temporaryDataDir();
    dataDirs.push(shared);
    const env = {
      REDIS_URL: redis.url,
      REDIS_PREFIX: prefix,
      DATABASE_URL,
      DATABASE_SCHEMA: schema,
      // One deployment: the address counters are keyed by its shared token.
      INTERNAL_TOKEN_FILE: join(shared, "internal.token"),
      X402_PAY_TO: PAY_TO,
      FACILITATOR_URL: peer.url,
      PUBLIC_BASE_URL: "https://receiptd.example",
      X402_SIGNATURE_CHECKS_PER_ADDRESS: String(PER_ADDRESS),
      CRYSTAL_UPLOADS_PER_KEY: String(UPLOADS_PER_KEY),
      ANON_DAILY_CAP: "1000000",
      ANON_ADDRESS_DAILY_CAP: "1000000",
      CPU_THREADS: "1",
    };
    // One after the other: the first creates the token file the second reads.
    for (let index = 0; index < 2; index += 1) {
      const dataDir = await temporaryDataDir();
      dataDirs.push(dataDir);
      webs.push(await startServerProcess({ ...env, DATA_DIR: dataDir }));
    }
    store = await openDocumentStore({
      dataDir: shared,
      databaseUrl: DATABASE_URL,
      databaseSchema: schema,
    });
    key = (await new KeyStore(store, { defaultDailyCap: 1_000_000 }).create({ name: "uploader" }))
      .key;
  });
  after(async () => {
    for (const web of webs) await stopServerProcess(web);
    await store?.close();
    await peer?.close();
    await redis?.stop();
    await dropSchema(schema);
    for (const dir of dataDirs) await rm(dir, { recursive: true, force: true });
  });

  test("one address's signature checks are bounded by one budget across both webs", async (t) => {
    const offer = await offerOf(webs[0] as ServerProcess);
    const requirement = requirementFromWire(offer, 2);
    const payer = wallet();
    const forger = wallet();
    // Signed before the clock starts: well formed, signed by the wrong key, so each costs a
    // recovery and is refused after it (402 signer_mismatch), or is refused before it (429).
    const payments = await Promise.all(
      Array.from({ length: 40 }, () => bogusPayment(forger, payer, requirement, offer)),
    );
    // Each web recovers a few signatures first, from other addresses (their own buckets), so
    // that the measured calls run warm and close together.
    for (const [index, web] of webs.entries()) {
      for (const last of [10, 11]) {
        const warm = await bogusPayment(forger, payer, requirement, offer);
        const answer = await postFrom(web, `127.0.0.${last + 2 * index}`, warm);
        assert.equal(answer, 402);
      }
    }
    const started = performance.now();
    const answers = await Promise.all(
      payments.map(async (header, index) => {
        const web = webs[index % 2] as ServerProcess;
        const answer = await fetch(`${web.base}/verify`, {
          method: "POST",
          headers: { "payment-signature": header },
          body: GOOD,
        });
        const body = (await answer.json()) as { error?: string };
        return { web: index % 2, status: answer.status, error: body.error };
      }),
    );
    const elapsedS = (performance.now() - started) / 1000;
    const checked = answers.filter((answer) => answer.error === "signer_mismatch");
    const limited = answers.filter((answer) => answer.error === "payment_rate_limited");
    assert.equal(checked.length + limited.length, answers.length, JSON.stringify(answers));
    for (const answer of checked) assert.equal(answer.status, 402);
    for (const answer of limited) assert.equal(answer.status, 429);
    // One bucket: its burst and what it earned while the calls ran. Two buckets (the old
    // per-process budget) would allow twice the burst.
    const allowed = 2 * PER_ADDRESS + PER_ADDRESS * elapsedS;
    t.diagnostic(
      `40 bogus payments from one address over 2 webs in ${elapsedS.toFixed(2)} s: ` +
        `${checked.length} signatures checked (one budget allows ${allowed.toFixed(1)}; ` +
        `one per web would allow ${(2 * allowed).toFixed(1)}), ${limited.length} refused`,
    );
    assert.ok(checked.length <= allowed, `${checked.length} checked, at most ${allowed} allowed`);
    assert.ok(checked.length >= 2 * PER_ADDRESS, "the burst itself was granted");
    for (const web of [0, 1]) {
      assert.ok(
        limited.some((answer) => answer.web === web),
        `web ${web} refused once the shared budget was spent`,
      );
    }
  });

  test("one key's concurrent crystal uploads are bounded by CRYSTAL_UPLOADS_PER_KEY across both webs", async (t) => {
    const attempts: { web: number; client: RawClient }[] = [];
    try {
      for (let index = 0; index < 10; index += 1) {
        const web = webs[index % 2] as ServerProcess;
        const client = await RawClient.open(Number(new URL(web.base).port));
        // A body announced but not sent: an admitted upload is asked for it (100 Continue)
        // and holds its slot; a refused one is answered 429 at once.
        client.send(
          `POST /crystals HTTP/1.1\r\nHost: 127.0.0.1\r\nX-SVC-Key: ${key}\r\n` +
            "Content-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: 10000\r\n\r\n",
        );
        attempts.push({ web: index % 2, client });
      }
      assert.ok(
        await until(() => attempts.every(({ client }) => client.responses().length > 0)),
        "every upload was admitted or refused",
      );
      const statuses = attempts.map(({ client }) => client.responses()[0]?.status);
      const admitted = statuses.filter((status) => status === 100).length;
      const refused = attempts.filter(({ client }) => client.responses()[0]?.status === 429);
      t.diagnostic(
        `10 uploads of one key over 2 webs: ${admitted} held at once (limit ${UPLOADS_PER_KEY}), ${refused.length} refused`,
      );
      assert.equal(admitted, UPLOADS_PER_KEY, JSON.stringify(statuses));
      assert.equal(refused.length, 10 - UPLOADS_PER_KEY);
      for (const { client } of refused) {
        const [answer] = client.responses();
        assert.equal(answer?.headers["retry-after"], "1");
        assert.deepEqual(JSON.parse(answer?.body ?? ""), {
          error: "too_many_uploads",
          detail:
            "this key is already sending as many bodies as it may at once; retry when one is answered",
          limit: UPLOADS_PER_KEY,
        });
      }
    } finally {
      for (const { client } of attempts) client.destroy();
    }
    // The clients went: each web released its slots, and the key uploads again on either.
    const inspect = await openTestRedis("", redis.url);
    try {
      assert.ok(
        await untilAsync(
          async () => (await keysUnder(inspect.client, `${prefix}uploads:`)).length === 0,
        ),
        "the slots were given back",
      );
    } finally {
      await inspect.close();
    }
    for (const web of webs) {
      const again = await fetch(`${web.base}/crystals`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-svc-key": key },
        body: "{}",
      });
      // Admitted (not 429); the body is not an envelope.
      assert.equal(again.status, 400);
    }
  });
});

/** The first offer of `/verify`'s v2 challenge. */
async function offerOf(web: ServerProcess): Promise<JsonObject> {
  const challenge = await fetch(`${web.base}/verify`, { method: "POST", body: GOOD });
  await challenge.body?.cancel();
  assert.equal(challenge.status, 402);
  const required = fromHeader(String(challenge.headers.get("payment-required")));
  const wire = fromPlain((required as { accepts: unknown[] }).accepts[0]);
  assert.ok(isObject(wire));
  return wire;
}

/** A payment header claiming to be `payer`'s, signed by `forger`, valid now. */
async function bogusPayment(
  forger: PrivateKeyAccount,
  payer: PrivateKeyAccount,
  requirement: ReturnType<typeof requirementFromWire>,
  offer: JsonObject,
): Promise<string> {
  const nowS = BigInt(Math.floor(Date.now() / 1000));
  const signed = await signAuthorization(forger, requirement, {
    from: payer.address,
    validAfter: nowS - 600n,
    validBefore: nowS + BigInt(requirement.maxTimeoutSeconds),
  });
  return toHeader(v2Payment(offer, signed));
}

/** `POST /verify` with a payment from another loopback address; resolves with the status. */
function postFrom(web: ServerProcess, localAddress: string, payment: string): Promise<number> {
  const url = new URL(`${web.base}/verify`);
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: "POST",
        localAddress,
        headers: { "payment-signature": payment, "content-length": GOOD.length },
      },
      (response) => {
        response.resume();
        response.on("end", () => resolve(response.statusCode ?? 0));
      },
    );
    request.on("error", reject);
    request.end(GOOD);
  });
}

/** Polls an async condition every 50 ms for at most 15 s. */
async function untilAsync(condition: () => Promise<boolean>): Promise<boolean> {
  const deadline = Date.now() + 15_000;
  while (!(await condition())) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return true;
}
