/** Configuration from the environment (service.md §12–§13). */
import assert from "node:assert/strict";
import { availableParallelism } from "node:os";
import { resolve } from "node:path";
import { describe, test } from "node:test";
import { ConfigError, DEFAULT_LIMITS, loadConfig } from "../../src/service/config.js";

describe("loadConfig", () => {
  test("defaults", () => {
    const config = loadConfig({});
    assert.equal(config.host, "127.0.0.1");
    assert.equal(config.port, 8080);
    assert.equal(config.dataDir, resolve("data"));
    assert.equal(config.logLevel, "info");
    assert.equal(config.corpusDir, null);
    assert.deepEqual(config.limits, DEFAULT_LIMITS);
    assert.equal(config.limits.maxBodyBytes, 1_048_576);
    assert.equal(config.limits.maxBatch, 50);
    assert.equal(config.limits.maxResultBytes, 4 * 1_048_576);
    assert.equal(config.cpuPool.threads, availableParallelism());
    assert.equal(config.cpuPool.maxQueue, availableParallelism() * 32);
    assert.match(config.cpuPool.verifyTaskModule, /\/workers\/verify\.ts$/);
  });

  test("environment variables", () => {
    const config = loadConfig({
      HOST: "0.0.0.0",
      PORT: "9000",
      DATA_DIR: "/srv/receiptd",
      LOG_LEVEL: "warn",
      CORPUS_DIR: "corpus-copy",
      MAX_BODY_BYTES: "2048",
      MAX_BATCH: "10",
      MAX_RESULT_BYTES: "65536",
      ANON_DAILY_CAP: "5",
      KEY_DAILY_CAP: "6",
      X402_DAILY_CAP: "7",
      CPU_THREADS: "3",
      CPU_MAX_QUEUE: "0",
    });
    assert.equal(config.host, "0.0.0.0");
    assert.equal(config.port, 9000);
    assert.equal(config.dataDir, "/srv/receiptd");
    assert.equal(config.logLevel, "warn");
    assert.equal(config.corpusDir, resolve("corpus-copy"));
    assert.equal(config.limits.maxBodyBytes, 2048);
    assert.equal(config.limits.maxBatch, 10);
    assert.equal(config.limits.maxResultBytes, 65_536);
    assert.equal(config.limits.anonymousDailyCap, 5);
    assert.equal(config.limits.keyDailyCap, 6);
    assert.equal(config.limits.x402PayerDailyCap, 7);
    assert.deepEqual(
      { threads: config.cpuPool.threads, maxQueue: config.cpuPool.maxQueue },
      { threads: 3, maxQueue: 0 },
    );
  });

  test("overrides win over the environment and merge into the nested sections", () => {
    const config = loadConfig(
      { PORT: "9000", MAX_BATCH: "10" },
      { port: 0, limits: { maxBodyBytes: 10 }, cpuPool: { threads: 1 } },
    );
    assert.equal(config.port, 0);
    assert.equal(config.limits.maxBodyBytes, 10);
    assert.equal(config.limits.maxBatch, 10);
    assert.equal(config.cpuPool.threads, 1);
  });

  for (const [name, value] of [
    ["PORT", "80a"],
    ["PORT", "70000"],
    ["PORT", "-1"],
    ["MAX_BATCH", "0"],
    ["MAX_RESULT_BYTES", "1023"],
    ["MAX_RESULT_BYTES", "4MiB"],
    ["CPU_THREADS", "0"],
    ["LOG_LEVEL", "verbose"],
  ] as const) {
    test(`${name}=${value} is refused`, () => {
      assert.throws(() => loadConfig({ [name]: value }), ConfigError);
    });
  }
});
