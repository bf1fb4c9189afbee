/** Configuration from the environment (service.md §12–§13). */
import assert from "node:assert/strict";
import { availableParallelism } from "node:os";
import { resolve } from "node:path";
import { describe, test } from "node:test";
import {
  ConfigError,
  DEFAULT_EVALUATION_KEYS,
  DEFAULT_HTTP_TIMEOUTS,
  DEFAULT_LIMITS,
  defaultMaxConnections,
  loadConfig,
  openFileLimit,
} from "../../src/service/config.js";

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
    assert.deepEqual(config.cpuPool.taskModules, {});
    assert.deepEqual(config.http, {
      headersTimeoutMs: 20_000,
      requestTimeoutMs: 60_000,
      idleTimeoutMs: 30_000,
      keepAliveTimeoutMs: 72_000,
      maxConnections: defaultMaxConnections(openFileLimit(), 16),
      healthReserveConnections: 16,
      maxConnectionsPerAddress: Math.floor(defaultMaxConnections(openFileLimit(), 16) / 4),
      minReadBytesPerSecond: 8192,
      memoryBudgetBytes: 256 * 1_048_576,
      memorySharePercent: 25,
    });
    assert.deepEqual(config.mcpAllowedOrigins, []);
    assert.deepEqual(config.evaluationKeys, DEFAULT_EVALUATION_KEYS);
    assert.deepEqual(config.evaluationKeys, {
      keyDailyCap: 100,
      ttlHours: 24,
      perAddressDaily: 2,
      perNetworkDaily: 8,
      perDay: 200,
      powBits: 16,
      powRampBits: 8,
    });
    assert.equal(config.trustProxy, false);
  });

  test("evaluation keys: terms from the environment, or off", () => {
    const config = loadConfig({
      EVALUATION_KEYS: "on",
      EVALUATION_KEY_DAILY_CAP: "25",
      EVALUATION_KEY_TTL_HOURS: "2",
      EVALUATION_KEYS_PER_ADDRESS: "1",
      EVALUATION_KEYS_PER_NETWORK: "3",
      EVALUATION_KEYS_PER_DAY: "40",
      EVALUATION_POW_BITS: "0",
      EVALUATION_POW_RAMP_BITS: "0",
    });
    assert.deepEqual(config.evaluationKeys, {
      keyDailyCap: 25,
      ttlHours: 2,
      perAddressDaily: 1,
      perNetworkDaily: 3,
      perDay: 40,
      powBits: 0,
      powRampBits: 0,
    });
    for (const off of ["off", "OFF", " off "]) {
      assert.equal(loadConfig({ EVALUATION_KEYS: off }).evaluationKeys, null);
    }
    // Off, the terms are not read, so a stale one does not stop the start.
    assert.equal(
      loadConfig({ EVALUATION_KEYS: "off", EVALUATION_POW_BITS: "99" }).evaluationKeys,
      null,
    );
  });

  test("TRUST_PROXY: proxy addresses, CIDR ranges and proxy-addr's names", () => {
    assert.deepEqual(
      loadConfig({ TRUST_PROXY: "10.0.0.0/8, 192.0.2.7,2001:db8::/32, loopback" }).trustProxy,
      ["10.0.0.0/8", "192.0.2.7", "2001:db8::/32", "loopback"],
    );
    assert.equal(loadConfig({ TRUST_PROXY: " " }).trustProxy, false);
  });

  test("the connection cap stays below the open-file limit", () => {
    assert.equal(defaultMaxConnections(null, 16), 4096);
    assert.equal(defaultMaxConnections(1_048_576, 16), 4096);
    // The machine: 4,096 files leave 1,024 to everything else and 16 to the reserve.
    assert.equal(defaultMaxConnections(4096, 16), 3056);
    assert.equal(defaultMaxConnections(1024, 16), 752);
    assert.equal(defaultMaxConnections(8, 16), 1);
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
      ANON_ADDRESS_DAILY_CAP: "4",
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
    assert.equal(config.limits.anonymousAddressDailyCap, 4);
    assert.equal(config.limits.keyDailyCap, 6);
    assert.equal(config.limits.x402PayerDailyCap, 7);
    assert.deepEqual(
      { threads: config.cpuPool.threads, maxQueue: config.cpuPool.maxQueue },
      { threads: 3, maxQueue: 0 },
    );
  });

  test("connection limits and MCP origins from the environment", () => {
    const config = loadConfig({
      HEADERS_TIMEOUT_MS: "5000",
      REQUEST_TIMEOUT_MS: "30000",
      IDLE_TIMEOUT_MS: "10000",
      KEEP_ALIVE_TIMEOUT_MS: "65000",
      MAX_CONNECTIONS: "20000",
      HEALTH_RESERVE_CONNECTIONS: "0",
      MAX_CONNECTIONS_PER_ADDRESS: "300",
      MIN_READ_BYTES_PER_SECOND: "0",
      MEMORY_BUDGET_BYTES: "1048576",
      MCP_ALLOWED_ORIGINS: "https://app.example, http://localhost:5173/ ,HTTPS://Other.Example:443",
    });
    assert.deepEqual(config.http, {
      headersTimeoutMs: 5000,
      requestTimeoutMs: 30_000,
      idleTimeoutMs: 10_000,
      keepAliveTimeoutMs: 65_000,
      maxConnections: 20_000,
      healthReserveConnections: 0,
      maxConnectionsPerAddress: 300,
      minReadBytesPerSecond: 0,
      memoryBudgetBytes: 1_048_576,
      memorySharePercent: 25,
    });
    assert.deepEqual(config.mcpAllowedOrigins, [
      "https://app.example",
      "http://localhost:5173",
      "https://other.example",
    ]);
    assert.equal(
      DEFAULT_HTTP_TIMEOUTS.headersTimeoutMs <= DEFAULT_HTTP_TIMEOUTS.requestTimeoutMs,
      true,
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
    ["IDLE_TIMEOUT_MS", "0"],
    ["REQUEST_TIMEOUT_MS", "1s"],
    ["MAX_CONNECTIONS", "0"],
    ["MCP_ALLOWED_ORIGINS", "app.example"],
    ["MCP_ALLOWED_ORIGINS", "https://app.example/path"],
    ["MCP_ALLOWED_ORIGINS", "ftp://app.example"],
    ["EVALUATION_KEYS", "yes"],
    ["EVALUATION_KEY_DAILY_CAP", "0"],
    ["EVALUATION_KEY_TTL_HOURS", "0"],
    ["EVALUATION_KEY_TTL_HOURS", "2161"],
    ["EVALUATION_KEYS_PER_ADDRESS", "0"],
    ["EVALUATION_KEYS_PER_DAY", "0"],
    ["EVALUATION_POW_BITS", "33"],
    ["EVALUATION_KEYS_PER_NETWORK", "0"],
    ["EVALUATION_POW_RAMP_BITS", "33"],
    ["ANON_ADDRESS_DAILY_CAP", "-1"],
    ["TRUST_PROXY", "1"],
    ["TRUST_PROXY", "true"],
    ["TRUST_PROXY", "10.0.0.0/33"],
    ["TRUST_PROXY", "proxy.example"],
  ] as const) {
    test(`${name}=${value} is refused`, () => {
      assert.throws(() => loadConfig({ [name]: value }), ConfigError);
    });
  }
});
