/**
 * Per-address shares of the anonymous daily cap (issue 22, finding 3), over real sockets from
 * distinct loopback source addresses, in both modes (memory and Redis cap stores): one address
 * that spends its share leaves the others their keyless reads, and the anonymous cap stays
 * the backstop for all of them together.
 */
import assert from "node:assert/strict";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { NOTARIZATIONS } from "../../../src/notarization/store.js";
import { strongEtag } from "../../../src/service/http/stored-document.js";
import { keysUnder, openTestRedis, randomPrefix, SHARED_REDIS_URL } from "../../redis/support.js";
import { requestFrom } from "../support/from-address.js";
import { startTestService, type TestService } from "../support/service.js";

/** One keyless GET on a fresh connection from `localAddress`. */
const getFrom = (port: number, localAddress: string, path: string) =>
  requestFrom(port, localAddress, { path });

const SHARE = 4;
const NETWORK = 6;
const CAP = 14;
/** 25% of 14: the last 3 calls of the cap are kept for addresses' first calls of the day. */
const RESERVE_PERCENT = 25;
/** A keyless resource read that answers 200 without any stored document. */
const READ = "/notarize";

function sharesOverSockets(mode: string, redisPrefix: string | null): void {
  describe(`anonymous shares over sockets: ${mode}`, () => {
    let service: TestService;
    let port: number;
    before(async () => {
      service = await startTestService(
        {
          limits: {
            anonymousDailyCap: CAP,
            anonymousAddressDailyCap: SHARE,
            anonymousNetworkDailyCap: NETWORK,
            anonymousNewClientReservePercent: RESERVE_PERCENT,
          },
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

    test("address and network shares, the reserve for new clients, metadata uncounted", async () => {
      const first = await getFrom(port, "127.0.1.1", READ);
      assert.equal(first.status, 200);
      // The address's share is the bucket that refuses first, so the headers describe it.
      assert.equal(first.headers["x-ratelimit-limit"], String(SHARE));
      assert.equal(first.headers["x-ratelimit-remaining"], String(SHARE - 1));
      assert.match(String(first.headers["ratelimit-policy"]), /^"anonymous-address";/);
      for (let i = 1; i < SHARE; i += 1) {
        assert.equal((await getFrom(port, "127.0.1.1", READ)).status, 200);
      }
      const spent = await getFrom(port, "127.0.1.1", READ);
      assert.equal(spent.status, 429);
      assert.equal(JSON.parse(spent.body).error, "daily_cap_reached");
      assert.equal(spent.headers["retry-after"], "86400");
      assert.match(String(spent.headers["ratelimit-policy"]), /^"anonymous-address";/);

      // A /24 flood: a second address of the network takes the rest of the network's share,
      // then every fresh address of that /24 is refused by the network's share.
      const neighbour = await getFrom(port, "127.0.1.2", READ);
      assert.equal(neighbour.status, 200);
      assert.equal(neighbour.headers["x-ratelimit-limit"], String(NETWORK));
      assert.equal(neighbour.headers["x-ratelimit-remaining"], "1");
      assert.equal((await getFrom(port, "127.0.1.2", READ)).status, 200);
      for (const address of ["127.0.1.3", "127.0.1.200"]) {
        const flooded = await getFrom(port, address, READ);
        assert.equal(flooded.status, 429);
        assert.match(String(flooded.headers["ratelimit-policy"]), /^"anonymous-network";/);
        assert.equal(flooded.headers["x-ratelimit-limit"], String(NETWORK));
      }
      // ...while an address of another network is admitted.
      for (let i = 0; i < SHARE; i += 1) {
        assert.equal((await getFrom(port, "127.0.2.1", READ)).status, 200);
      }
      // 10 of 14 spent. A third network's address: its first 3 calls may reach the whole cap
      // (11, 12, 13), its 4th is a returning client's, refused at 14 - 3 = 11.
      for (let i = 0; i < 3; i += 1) {
        assert.equal((await getFrom(port, "127.0.3.1", READ)).status, 200);
      }
      const returning = await getFrom(port, "127.0.3.1", READ);
      assert.equal(returning.status, 429);
      assert.match(String(returning.headers["ratelimit-policy"]), /^"anonymous";/);
      assert.equal(returning.headers["x-ratelimit-limit"], String(CAP - 3));

      // A fresh address still gets its evaluation-key challenge from the reserve.
      const challenge = await getFrom(port, "127.0.4.1", "/keys/evaluation/challenge");
      assert.equal(challenge.status, 200, challenge.body);
      assert.equal(challenge.headers["x-ratelimit-remaining"], "0");
      // The cap is now wholly spent: the next fresh address is refused by it.
      const backstop = await getFrom(port, "127.0.5.1", "/keys/evaluation/challenge");
      assert.equal(backstop.status, 429);
      assert.equal(backstop.headers["x-ratelimit-limit"], String(CAP));

      // Metadata and health checks are never counted, whoever asks, even now.
      for (const path of ["/info", "/openapi.json", "/health"]) {
        const answer = await getFrom(port, "127.0.1.1", path);
        assert.equal(answer.status, 200, path);
        assert.equal(answer.headers["x-ratelimit-limit"], undefined, path);
      }
      const anonymous = JSON.parse((await getFrom(port, "127.0.5.1", "/info")).body).limits
        .anonymous;
      assert.deepEqual(anonymous, {
        daily_cap: CAP,
        per_address_daily_cap: SHARE,
        per_network_daily_cap: NETWORK,
        new_client_reserve: 3,
        new_client_calls: 3,
        address: "an IPv4 address or an IPv6 /64, as seen through TRUST_PROXY",
        network: "an IPv4 /24 or an IPv6 /48 of that address",
      });
    });
  });
}

sharesOverSockets("embedded (memory cap store)", null);
sharesOverSockets("distributed (Redis cap store)", randomPrefix());

describe("anonymous shares by network", () => {
  let service: TestService;
  before(async () => {
    service = await startTestService(
      {
        limits: {
          anonymousDailyCap: 100,
          anonymousAddressDailyCap: 1,
          anonymousNetworkDailyCap: 2,
        },
      },
      { anonymous: true },
    );
  });
  after(() => service.close());

  const info = (remoteAddress: string) =>
    service.app.inject({ method: "GET", url: "/notarize", remoteAddress });

  test("an IPv6 /64 is one address; an IPv4-mapped address is its IPv4 address", async () => {
    assert.equal((await info("2001:db8:1:2::1")).statusCode, 200);
    assert.equal((await info("2001:db8:1:2:ffff::9")).statusCode, 429);
    assert.equal((await info("2001:db8:1:3::1")).statusCode, 200);
    // Two /64s of one /48 spent the network's share of 2; another /48 is admitted.
    const sameSite = await info("2001:db8:1:4::1");
    assert.equal(sameSite.statusCode, 429);
    assert.match(String(sameSite.headers["ratelimit-policy"]), /^"anonymous-network";/);
    assert.equal((await info("2001:db8:2::1")).statusCode, 200);
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

describe("conditional reads", () => {
  let service: TestService;
  let port: number;
  before(async () => {
    service = await startTestService({}, { anonymous: true });
    await service.app.listen({ port: 0, host: "127.0.0.1" });
    port = (service.app.server.address() as AddressInfo).port;
  });
  after(() => service.close());

  test("a 304 is charged like the 200 it stands for, whatever the tag matched", async () => {
    const hex = "c4".repeat(32);
    const stored = await service.app.documentStore.create(
      NOTARIZATIONS,
      `sha256:${hex}`,
      Buffer.from('{"statement":{}}'),
    );
    const path = `/notarize/${hex}`;
    const plain = await requestFrom(port, "127.0.7.1", { path });
    assert.equal(plain.status, 200);
    const etag = String(plain.headers.etag);
    assert.equal(etag, strongEtag(stored.stored));
    const share = Number(plain.headers["x-ratelimit-limit"]);
    assert.equal(plain.headers["x-ratelimit-remaining"], String(share - 1));
    const conditions = ["*", `W/${etag}`, `"other", ${etag}`];
    for (const [index, condition] of conditions.entries()) {
      const notModified = await requestFrom(port, "127.0.7.1", {
        path,
        headers: { "if-none-match": condition },
      });
      assert.equal(notModified.status, 304, condition);
      assert.equal(notModified.headers["x-ratelimit-remaining"], String(share - 2 - index));
    }
    // A refusal is still given back: a missing notarization costs nothing.
    const missing = await requestFrom(port, "127.0.7.1", {
      path: `/notarize/${"d5".repeat(32)}`,
      headers: { "if-none-match": "*" },
    });
    assert.equal(missing.status, 404);
    assert.equal(missing.headers["x-ratelimit-remaining"], String(share - 1 - conditions.length));
  });
});
