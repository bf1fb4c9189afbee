/**
 * Per-address shares of the anonymous daily cap (issue 22, finding 3), over real sockets from
 * distinct loopback source addresses, in both modes (memory and Redis cap stores): one address
 * that spends its share leaves the others their keyless reads, and the anonymous cap stays
 * the backstop for all of them together.
 */
import assert from "node:assert/strict";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { keysUnder, openTestRedis, randomPrefix, SHARED_REDIS_URL } from "../../redis/support.js";
import { requestFrom } from "../support/from-address.js";
import { startTestService, type TestService } from "../support/service.js";

/** One keyless GET on a fresh connection from `localAddress`. */
const getFrom = (port: number, localAddress: string, path: string) =>
  requestFrom(port, localAddress, { path });

const SHARE = 3;
const CAP = 8;

function sharesOverSockets(mode: string, redisPrefix: string | null): void {
  describe(`anonymous shares over sockets: ${mode}`, () => {
    let service: TestService;
    let port: number;
    before(async () => {
      service = await startTestService(
        {
          limits: { anonymousDailyCap: CAP, anonymousAddressDailyCap: SHARE },
          ...(redisPrefix === null ? {} : { redisUrl: SHARED_REDIS_URL, redisPrefix }),
        },
        { anonymous: true },
      );
      await service.app.listen({ port: 0, host: "127.0.0.1" });
      port = (service.app.server.address() as AddressInfo).port;
    });
    after(async () => {
      await service.close();
      if (redisPrefix !== null) {
        const cleanup = await openTestRedis(redisPrefix);
        const keys = await keysUnder(cleanup.client, redisPrefix);
        if (keys.length > 0) await cleanup.client.unlink(...keys);
        await cleanup.close();
      }
    });

    test("one address spends its share; another still reads; the cap is the backstop", async () => {
      const first = await getFrom(port, "127.0.1.1", "/info");
      assert.equal(first.status, 200);
      // The share is the bucket that refuses first, so it is the one the headers describe.
      assert.equal(first.headers["x-ratelimit-limit"], String(SHARE));
      assert.equal(first.headers["x-ratelimit-remaining"], String(SHARE - 1));
      const anonymous = JSON.parse(first.body).limits.anonymous;
      assert.deepEqual(anonymous, {
        daily_cap: CAP,
        per_address_daily_cap: SHARE,
        address: "an IPv4 address or an IPv6 /64, as seen through TRUST_PROXY",
      });
      for (let i = 1; i < SHARE; i += 1) {
        assert.equal((await getFrom(port, "127.0.1.1", "/openapi.json")).status, 200);
      }
      const spent = await getFrom(port, "127.0.1.1", "/info");
      assert.equal(spent.status, 429);
      assert.equal(JSON.parse(spent.body).error, "daily_cap_reached");
      assert.equal(spent.headers["retry-after"], "86400");
      // Refusals of the spent address cost the pool nothing.
      for (let i = 0; i < 5; i += 1) {
        assert.equal((await getFrom(port, "127.0.1.1", "/info")).status, 429);
      }

      const second = await getFrom(port, "127.0.1.2", "/info");
      assert.equal(second.status, 200);
      assert.equal(second.headers["x-ratelimit-remaining"], String(SHARE - 1));

      // 3 + 1 spent of 8: a third address's share fills the pool to 7, then an address of
      // another /24 gets the last call and the one after it is refused by the cap, its own
      // share untouched.
      for (let i = 0; i < SHARE; i += 1) {
        assert.equal((await getFrom(port, "127.0.2.3", "/info")).status, 200);
      }
      const last = await getFrom(port, "127.0.3.5", "/info");
      assert.equal(last.status, 200);
      assert.equal(last.headers["x-ratelimit-limit"], String(CAP));
      assert.equal(last.headers["x-ratelimit-remaining"], "0");
      const backstop = await getFrom(port, "127.0.3.6", "/info");
      assert.equal(backstop.status, 429);
      assert.equal(backstop.headers["x-ratelimit-limit"], String(CAP));
      // /health is never counted, whoever asks.
      assert.equal((await getFrom(port, "127.0.1.1", "/health")).status, 200);
    });
  });
}

sharesOverSockets("embedded (memory cap store)", null);
sharesOverSockets("distributed (Redis cap store)", randomPrefix());

describe("anonymous shares by network", () => {
  let service: TestService;
  before(async () => {
    service = await startTestService(
      { limits: { anonymousDailyCap: 100, anonymousAddressDailyCap: 1 } },
      { anonymous: true },
    );
  });
  after(() => service.close());

  const info = (remoteAddress: string) =>
    service.app.inject({ method: "GET", url: "/info", remoteAddress });

  test("an IPv6 /64 is one address; an IPv4-mapped address is its IPv4 address", async () => {
    assert.equal((await info("2001:db8:1:2::1")).statusCode, 200);
    assert.equal((await info("2001:db8:1:2:ffff::9")).statusCode, 429);
    assert.equal((await info("2001:db8:1:3::1")).statusCode, 200);
    assert.equal((await info("192.0.2.10")).statusCode, 200);
    assert.equal((await info("::ffff:192.0.2.10")).statusCode, 429);
  });

  test("a refusal gives the share back as well as the cap", async () => {
    const missing = `/anchors/sha256:${"0".repeat(64)}`;
    const address = "198.51.100.20";
    for (let i = 0; i < 3; i += 1) {
      const answer = await service.app.inject({
        method: "GET",
        url: missing,
        remoteAddress: address,
      });
      assert.equal(answer.statusCode, 404);
    }
    assert.equal((await info(address)).statusCode, 200);
  });
});
