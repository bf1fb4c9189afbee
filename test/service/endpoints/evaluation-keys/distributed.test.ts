/**
 * Evaluation keys in distributed mode: the shared flow (flow-contract.ts) over two instances
 * sharing Redis, PostgreSQL and the internal token; what Redis holds; and a Redis outage,
 * during which challenges are still issued but none is spent.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { nodeSha256 } from "../../../../src/access/evaluation/node-sha256.js";
import { solveProofOfWork } from "../../../../src/portable/proof-of-work.js";
import {
  keysUnder,
  openTestRedis,
  type PrivateRedis,
  randomPrefix,
  SHARED_REDIS_URL,
  startPrivateRedis,
} from "../../../redis/support.js";
import { DATABASE_URL, dropSchema, privateSchema } from "../../../support/pg.js";
import { startTestService, type TestService } from "../../support/service.js";
import {
  type EvaluationDeployment,
  evaluationKeysFlow,
  FLOW_ANONYMOUS_CAP,
  FLOW_TERMS,
  T0,
} from "./flow-contract.js";

async function removeRedisKeys(prefix: string): Promise<void> {
  const cleanup = await openTestRedis(prefix);
  const keys = await keysUnder(cleanup.client, prefix);
  if (keys.length > 0) await cleanup.client.unlink(...keys);
  await cleanup.close();
}

/** Two instances of one deployment: one Redis prefix, one schema, one internal token. */
async function deployTwo(prefix: string, schema: string): Promise<EvaluationDeployment> {
  const clock = { now: T0 };
  const logs: string[] = [];
  const shared = await mkdtemp(join(tmpdir(), "receiptd-evaluation-shared-"));
  const internalTokenFile = join(shared, "internal.token");
  await writeFile(internalTokenFile, randomBytes(32).toString("hex"), { mode: 0o600 });
  const auditDir = join(shared, "audit");
  const overrides = {
    redisUrl: SHARED_REDIS_URL,
    redisPrefix: prefix,
    databaseUrl: DATABASE_URL,
    databaseSchema: schema,
    internalTokenFile,
    auditDir,
    evaluationKeys: FLOW_TERMS,
    limits: { anonymousDailyCap: FLOW_ANONYMOUS_CAP, anonymousAddressDailyCap: FLOW_ANONYMOUS_CAP },
    logLevel: "trace" as const,
    logDestination: { write: (line: string) => logs.push(line) },
  };
  const options = { anonymous: true, clock: () => clock.now };
  const first = await startTestService(overrides, options);
  const second = await startTestService(overrides, options);
  return {
    instances: [first, second],
    clock,
    logs,
    auditDir,
    cliEnv: {
      DATA_DIR: first.config.dataDir,
      DATABASE_URL,
      DATABASE_SCHEMA: schema,
    },
    async close() {
      await first.close();
      await second.close();
      await rm(shared, { recursive: true, force: true });
    },
  };
}

const prefix = randomPrefix();
const schema = privateSchema();

describe("distributed evaluation keys", () => {
  after(async () => {
    await removeRedisKeys(prefix);
    await dropSchema(schema);
  });

  evaluationKeysFlow("distributed, two instances", () => deployTwo(prefix, schema));

  test("Redis holds spent challenges and counters, never an address", async () => {
    const connection = await openTestRedis(prefix);
    try {
      const keys = await keysUnder(connection.client, prefix);
      const names = keys.map((key) => key.slice(prefix.length));
      assert.ok(names.some((name) => /^evaluation:challenge:\{[A-Za-z0-9_-]{22}\}$/.test(name)));
      const addressCounters = names.filter((name) => name.startsWith("cap:{evaluation-address:"));
      assert.ok(addressCounters.length >= 3);
      for (const name of addressCounters) {
        assert.match(name, /^cap:\{evaluation-address:[0-9a-f]{32}:\d+\}$/);
      }
      assert.ok(names.includes(`cap:{evaluation-issuance:${Math.floor(T0 / 86_400_000)}}`));
      for (const name of names) assert.equal(/192\.0\.2|203\.0\.113|198\.51/.test(name), false);
    } finally {
      await connection.close();
    }
  });
});

describe("while Redis is down", () => {
  let redis: PrivateRedis;
  let service: TestService;
  const outageSchema = privateSchema();
  before(async () => {
    redis = await startPrivateRedis();
    service = await startTestService(
      {
        redisUrl: redis.url,
        redisPrefix: randomPrefix(),
        databaseUrl: DATABASE_URL,
        databaseSchema: outageSchema,
        evaluationKeys: { ...FLOW_TERMS, powBits: 4 },
      },
      { anonymous: true },
    );
  });
  after(async () => {
    await service.close();
    await redis.stop();
    await dropSchema(outageSchema);
  });

  test("challenges are still issued, but none is spent: 503 challenge_ledger_unavailable", async () => {
    await redis.stop();
    const response = await service.app.inject({ method: "GET", url: "/keys/evaluation/challenge" });
    assert.equal(response.statusCode, 200);
    const { challenge, difficulty } = response.json();
    const body = { challenge, nonce: solveProofOfWork(nodeSha256, challenge, difficulty) };
    const refused = await service.app.inject({
      method: "POST",
      url: "/keys/evaluation",
      payload: JSON.stringify(body),
    });
    assert.equal(refused.statusCode, 503);
    assert.equal(refused.headers["retry-after"], "1");
    assert.deepEqual(refused.json(), {
      error: "challenge_ledger_unavailable",
      detail: "spent challenges cannot be checked right now; retry shortly",
    });
    // The challenge was not spent: once Redis is back, it buys its key.
    await redis.start();
    await service.app.backends.redis?.waitReady(10_000);
    const granted = await service.app.inject({
      method: "POST",
      url: "/keys/evaluation",
      payload: JSON.stringify(body),
    });
    assert.equal(granted.statusCode, 201, granted.body);
  });
});
