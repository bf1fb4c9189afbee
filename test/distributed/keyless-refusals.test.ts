/**
 * Keyless refusals are limited per address in the process (issue 34, finding 5), on a private
 * Redis whose INFO commandstats count every command: an unknown anchor's 404 costs the
 * anonymous cap's reserve and refund until the address has spent its refusals; after that it
 * is answered `429 too_many_refusals` at the door, with no Redis command, while another
 * address is still answered.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { Redis } from "ioredis";
import { REFUSAL_BURST } from "../../src/access/refusal-buckets.js";
import { type PrivateRedis, randomPrefix, startPrivateRedis } from "../redis/support.js";
import { startTestService, type TestService } from "../service/support/service.js";

/** Commands Redis has executed, all kinds, by INFO commandstats (INFO itself excluded). */
async function commandsExecuted(client: Redis): Promise<number> {
  const info = await client.info("commandstats");
  let total = 0;
  for (const match of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    if (match[1] !== "info") total += Number(match[2]);
  }
  return total;
}

describe("keyless refusals, limited per address without Redis", () => {
  let redis: PrivateRedis;
  let service: TestService;
  let observer: Redis;

  before(async () => {
    redis = await startPrivateRedis();
    service = await startTestService(
      { redisUrl: redis.url, redisPrefix: randomPrefix() },
      { anonymous: true },
    );
    observer = new Redis(redis.url);
  });
  after(async () => {
    observer.disconnect();
    await service.close();
    await redis.stop();
  });

  const unknownAnchor = (remoteAddress: string) =>
    service.app.inject({
      method: "GET",
      url: `/anchors/sha256:${randomBytes(32).toString("hex")}`,
      remoteAddress,
    });

  test("an address past its refusals is answered 429 at the door, at no Redis command", async () => {
    // Warm: the first request of a process opens what it opens once.
    assert.equal((await unknownAnchor("127.0.9.1")).statusCode, 404);

    const before404 = await commandsExecuted(observer);
    for (let index = 1; index < REFUSAL_BURST; index += 1) {
      assert.equal((await unknownAnchor("127.0.9.2")).statusCode, 404);
    }
    const per404 = ((await commandsExecuted(observer)) - before404) / (REFUSAL_BURST - 1);
    assert.ok(per404 > 0, "a counted keyless 404 reserves and refunds in Redis");
    assert.equal((await unknownAnchor("127.0.9.2")).statusCode, 404);

    const beforeRefused = await commandsExecuted(observer);
    const refused = await unknownAnchor("127.0.9.2");
    assert.equal(refused.statusCode, 429);
    assert.equal(refused.json().error, "too_many_refusals");
    assert.ok(Number(refused.headers["retry-after"]) >= 1);
    assert.equal(await commandsExecuted(observer), beforeRefused);

    // Another address keeps its own refusals.
    assert.equal((await unknownAnchor("127.0.9.3")).statusCode, 404);
    process.stdout.write(`# Redis commands per keyless 404: ${per404}; per refused: 0\n`);
  });
});
