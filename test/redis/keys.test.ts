/** Key names and cluster settings (issue 36): hash tags, BullMQ prefixes, the seeds' syntax. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { bullmqPrefix, normalisePrefix, taggedKey } from "../../src/redis/keys.js";
import { parseClusterNodes, redisTargetOf } from "../../src/redis/target.js";
import { ConfigError, loadConfig } from "../../src/service/config.js";

/** The part of `key` Redis Cluster hashes (its hash tag, or the whole key). */
function hashed(key: string): string {
  const open = key.indexOf("{");
  const close = key.indexOf("}", open + 1);
  return open === -1 || close === -1 || close === open + 1 ? key : key.slice(open + 1, close);
}

describe("Redis key names", () => {
  test("a tagged key is <prefix><family>:{<tag>}[:rest], hashed on its tag alone", () => {
    assert.equal(taggedKey("receiptd", "cap", "key:abc:20500"), "receiptd:cap:{key:abc:20500}");
    assert.equal(
      taggedKey("receiptd:", "cache", "digests", "index"),
      "receiptd:cache:{digests}:index",
    );
    assert.equal(hashed(taggedKey("p", "cache", "digests", "index")), "digests");
    assert.equal(hashed(`${taggedKey("p", "cache", "digests", "entry")}:abc`), "digests");
  });

  test("a queue's BullMQ keys and its budget share one tag", () => {
    assert.equal(bullmqPrefix("receiptd", "settlements"), "receiptd:{settlements}");
    const job = `${bullmqPrefix("receiptd", "settlements")}:settlements:0xabc`;
    assert.equal(hashed(job), hashed(taggedKey("receiptd", "budget", "settlements", "bytes")));
    assert.notEqual(hashed(job), hashed(`${bullmqPrefix("receiptd", "anchors")}:anchors:1`));
  });

  test("prefixes are normalised as before", () => {
    assert.equal(normalisePrefix("receiptd"), "receiptd:");
    assert.equal(normalisePrefix("receiptd:"), "receiptd:");
  });
});

describe("REDIS_CLUSTER_NODES", () => {
  test("host:port seeds, IPv6 in brackets, spaces ignored", () => {
    assert.deepEqual(parseClusterNodes("10.0.0.1:7000, redis-b:7001,[::1]:7002"), [
      { host: "10.0.0.1", port: 7000 },
      { host: "redis-b", port: 7001 },
      { host: "::1", port: 7002 },
    ]);
  });

  test("anything else is a configuration error", () => {
    for (const text of ["10.0.0.1", "a:b", "a:70000", ",", "a:1 b:2"]) {
      assert.throws(() => loadConfig({ REDIS_CLUSTER_NODES: text }), ConfigError, text);
    }
  });

  test("on its own it selects distributed mode on the cluster", () => {
    const config = loadConfig({ REDIS_CLUSTER_NODES: "127.0.0.1:7000" });
    assert.equal(config.redisUrl, null);
    assert.deepEqual(redisTargetOf(config), {
      clusterNodes: [{ host: "127.0.0.1", port: 7000 }],
      url: null,
    });
    assert.equal(redisTargetOf(loadConfig({})), null);
    assert.equal(redisTargetOf(loadConfig({ REDIS_URL: "redis://h:1" })), "redis://h:1");
  });

  test("a brace in REDIS_PREFIX is refused: it would become every key's hash tag", () => {
    assert.throws(() => loadConfig({ REDIS_PREFIX: "a{b}" }), ConfigError);
  });
});
