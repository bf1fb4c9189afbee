/**
 * One client cannot take the service down (issue 22, connections and memory), over real
 * sockets: connection shares per client address and idle connections closed to admit a new
 * client, the health reserve shared out per address, a memory budget that refuses before
 * reading a body, the anonymous body limit, at most N crystal bodies per key, a declared
 * length over the limit refused before `100 Continue`, the loopback check before the body,
 * trickle readers closed, and the metrics listener's own cap.
 *
 * Clients bind distinct loopback source addresses (127.0.1.x) to be distinct addresses to
 * the server. Caps and budgets are configured small, so every count stays in the dozens.
 */
import assert from "node:assert/strict";
import type { AddressInfo } from "node:net";
import { PassThrough } from "node:stream";
import { after, before, describe, test } from "node:test";
import { startMetricsServer } from "../../src/metrics/server.js";
import type { HttpServerConfig } from "../../src/service/config.js";
import { corpusBytes } from "../support/corpus.js";
import { jsonOf, RawClient, until } from "./support/raw-client.js";
import { startTestService, type TestService } from "./support/service.js";

const BUNDLE = corpusBytes("vectors/01_happy_minimal.json");

/** No timeout can be what closes a connection within a test's bounded waits. */
const LONG: Partial<HttpServerConfig> = {
  headersTimeoutMs: 60_000,
  requestTimeoutMs: 60_000,
  idleTimeoutMs: 60_000,
  keepAliveTimeoutMs: 60_000,
};

async function listening(service: TestService): Promise<number> {
  await service.app.listen({ port: 0, host: "127.0.0.1" });
  return (service.app.server.address() as AddressInfo).port;
}

function head(method: string, path: string, extra: string, contentLength: number): string {
  return `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${extra}Content-Length: ${contentLength}\r\n\r\n`;
}

const HEALTH = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";

/** A keyed `POST /verify` of a real bundle on a fresh connection from `address`. */
async function keyedVerify(port: number, address: string, key: string) {
  const client = await RawClient.open(port, address);
  try {
    client.send(head("POST", "/verify", `X-SVC-Key: ${key}\r\n`, BUNDLE.length));
    client.send(BUNDLE);
    const [response] = await client.responsesArrived(1);
    return response;
  } finally {
    client.destroy();
  }
}

/** `count` connections from `address`, each served one `GET /health` and then kept alive. */
async function idleKeepAlive(port: number, address: string, count: number): Promise<RawClient[]> {
  const clients: RawClient[] = [];
  for (let index = 0; index < count; index += 1) {
    const client = await RawClient.open(port, address);
    client.send(HEALTH);
    await client.responsesArrived(1);
    clients.push(client);
  }
  return clients;
}

describe("one address holding idle keep-alive connections up to the cap", () => {
  const MAX = 12;
  let service: TestService;
  let port: number;
  const held: RawClient[] = [];
  before(async () => {
    service = await startTestService({
      http: { ...LONG, maxConnections: MAX, maxConnectionsPerAddress: MAX },
    });
    port = await listening(service);
  });
  after(async () => {
    for (const client of held) client.destroy();
    await service.close();
  });

  test("a second address's keyed /verify is admitted: an idle connection makes room", async () => {
    held.push(...(await idleKeepAlive(port, "127.0.1.1", MAX)));
    const counts = () => service.app.connections.counts();
    assert.equal(counts().admitted, MAX);
    const response = await keyedVerify(port, "127.0.1.2", service.key ?? "");
    assert.equal(response?.status, 200);
    assert.equal((jsonOf(response) as { verdict: string }).verdict, "TRUSTED");
    assert.equal(counts().evicted, 1);
    assert.ok(await until(() => held.filter((client) => client.closed).length === 1));
  });
});

describe("connection shares per address", () => {
  const MAX = 12;
  const SHARE = 4;
  /** A quarter of it, 2, is one address's share of the reserve. */
  const RESERVE = 8;
  let service: TestService;
  let port: number;
  let key: string;
  const held: RawClient[] = [];
  const counts = () => service.app.connections.counts();
  before(async () => {
    service = await startTestService({
      http: {
        ...LONG,
        maxConnections: MAX,
        maxConnectionsPerAddress: SHARE,
        healthReserveConnections: RESERVE,
      },
    });
    port = await listening(service);
    key = service.key ?? "";
  });
  after(async () => {
    for (const client of held) client.destroy();
    await service.close();
  });

  test("an address past its share gets only /health, even with idle connections", async () => {
    const clients = await idleKeepAlive(port, "127.0.1.1", SHARE);
    held.push(...clients);
    const refused = await keyedVerify(port, "127.0.1.1", key);
    assert.equal(refused?.status, 503);
    assert.equal((jsonOf(refused) as { error: string }).error, "too_many_connections");
    assert.equal(counts().evicted, 0);
    assert.ok(clients.every((client) => !client.closed));
  });

  test("with its share busy, an address gets only /health; another address is served", async () => {
    for (const client of held.splice(0)) client.destroy();
    assert.ok(await until(() => counts().admitted === 0));
    for (let index = 0; index < SHARE; index += 1) {
      const client = await RawClient.open(port, "127.0.1.3");
      client.send(`${head("POST", "/verify", `X-SVC-Key: ${key}\r\n`, 1_000_000)}{`);
      held.push(client);
    }
    // Their bodies are admitted: each request is in progress, none idle.
    assert.ok(await until(() => service.app.memoryBudget.used >= SHARE * 1_000_000));

    const refused = await keyedVerify(port, "127.0.1.3", key);
    assert.equal(refused?.status, 503);
    assert.equal((jsonOf(refused) as { error: string }).error, "too_many_connections");
    const health = await RawClient.open(port, "127.0.1.3");
    health.send(HEALTH);
    assert.equal((await health.responsesArrived(1))[0]?.status, 200);
    health.destroy();

    const other = await keyedVerify(port, "127.0.1.4", key);
    assert.equal(other?.status, 200);
  });

  test("one address takes at most its share of the health reserve", async () => {
    // Fill the cap with busy connections from two more addresses.
    for (const address of ["127.0.1.5", "127.0.1.6"]) {
      for (let index = 0; index < SHARE; index += 1) {
        const client = await RawClient.open(port, address);
        client.send(`${head("POST", "/verify", `X-SVC-Key: ${key}\r\n`, 1_000_000)}{`);
        held.push(client);
      }
    }
    assert.ok(await until(() => service.app.memoryBudget.used >= MAX * 1_000_000));
    // Reserve connections that send nothing, from one address: it gets 2 of the 8.
    const silent: RawClient[] = [];
    for (let index = 0; index < RESERVE; index += 1) {
      silent.push(await RawClient.open(port, "127.0.1.7"));
    }
    try {
      assert.ok(await until(() => counts().reserve === 2));
      assert.ok(await until(() => silent.filter((client) => client.closed).length === RESERVE - 2));
      const health = await RawClient.open(port, "127.0.1.8");
      health.send(HEALTH);
      const [response] = await health.responsesArrived(1);
      assert.equal(response?.status, 200);
      assert.deepEqual(jsonOf(response), { ok: true });
      health.destroy();
    } finally {
      for (const client of silent) client.destroy();
    }
  });
});

describe("each principal's share of the memory budget (issue 32, finding 2)", () => {
  // A budget of 128 KiB, a quarter of it per principal: two held 16 KiB bodies fill a share.
  // Its last eighth (16 KiB) is the reserve, where one principal may hold 2 KiB.
  const BUDGET = 128 * 1024;
  const BODY = 16 * 1024;
  let service: TestService;
  let port: number;
  const held: RawClient[] = [];
  before(async () => {
    service = await startTestService({
      http: { ...LONG, memoryBudgetBytes: BUDGET, memorySharePercent: 25 },
      limits: { maxAnonymousBodyBytes: BODY },
    });
    port = await listening(service);
  });
  after(async () => {
    for (const client of held) client.destroy();
    await service.close();
  });

  /** A slow body (1 byte of `length`) from `address`: it holds its declared length. */
  async function slowBody(address: string, path: string, extra: string): Promise<RawClient> {
    const client = await RawClient.open(port, address);
    client.send(`${head("POST", path, extra, BODY)}{`);
    held.push(client);
    return client;
  }
  const mcp = "Content-Type: application/json\r\nAccept: application/json\r\n";
  const refusalOf = async (client: RawClient) => {
    assert.ok(await client.closedWithin());
    const [response] = client.responses();
    return {
      status: response?.status,
      body: jsonOf(response) as { error: string; detail: string },
    };
  };

  test("a key past its share is refused while another key is admitted and answered", async () => {
    const budget = service.app.memoryBudget;
    const flooder = (await service.app.accessServices.keys.create({ name: "share-flooder" })).key;
    const honest = (await service.app.accessServices.keys.create({ name: "share-honest" })).key;
    await slowBody("127.0.2.1", "/verify", `X-SVC-Key: ${flooder}\r\n`);
    await slowBody("127.0.2.2", "/verify", `X-SVC-Key: ${flooder}\r\n`);
    assert.ok(await until(() => budget.used >= 2 * BODY));

    const third = await slowBody("127.0.2.3", "/verify", `X-SVC-Key: ${flooder}\r\n`);
    const refused = await refusalOf(third);
    assert.equal(refused.status, 503);
    assert.equal(refused.body.error, "memory_budget_exceeded");
    assert.match(refused.body.detail, /MEMORY_SHARE_PERCENT/);
    // The other key, from another address, is still admitted and answered.
    assert.equal((await keyedVerify(port, "127.0.2.4", honest))?.status, 200);
  });

  test("anonymous callers share per address; past the reserve a newcomer still fits, a large body does not", async () => {
    const budget = service.app.memoryBudget;
    await slowBody("127.0.3.1", "/mcp", mcp);
    await slowBody("127.0.3.1", "/mcp", mcp);
    assert.ok(await until(() => budget.heldBy("anon:127.0.3.1") === 2 * BODY));
    const sameAddress = await refusalOf(await slowBody("127.0.3.1", "/mcp", mcp));
    assert.equal(sameAddress.status, 503);
    assert.match(sameAddress.body.detail, /MEMORY_SHARE_PERCENT/);

    // Two more principals take their shares: with the flooding key (previous test) they hold
    // the budget up to its reserve. A principal's large body now meets the budget itself, not
    // a share; a newcomer's small request still fits in the reserve.
    await slowBody("127.0.3.3", "/mcp", mcp);
    await slowBody("127.0.3.3", "/mcp", mcp);
    await slowBody("127.0.3.4", "/mcp", mcp);
    assert.ok(await until(() => budget.used >= BUDGET - BUDGET / 8));
    const large = await refusalOf(await slowBody("127.0.3.2", "/mcp", mcp));
    assert.equal(large.status, 503);
    assert.equal(large.body.error, "memory_budget_exceeded");
    assert.doesNotMatch(large.body.detail, /MEMORY_SHARE_PERCENT/);
    const small = await fetch(`http://127.0.0.1:${port}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    });
    assert.equal(small.status, 200);

    // Once the held bodies go, every share and the budget are given back.
    for (const client of held.splice(0)) client.destroy();
    assert.ok(await until(() => budget.used === 0));
    assert.equal(budget.heldBy("anon:127.0.3.1"), 0);
    const list = { jsonrpc: "2.0", id: 1, method: "tools/list" };
    const again = await fetch(`http://127.0.0.1:${port}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify(list),
    });
    assert.equal(again.status, 200);
  });
});

describe("body admission and the memory budget", () => {
  const MIB = 1024 * 1024;
  let service: TestService;
  let port: number;
  let key: string;
  before(async () => {
    service = await startTestService({
      // No share: these tests are about the budget itself (shares: the next describe).
      http: { ...LONG, memoryBudgetBytes: MIB, memorySharePercent: 100 },
      limits: { maxCrystalUploadsPerKey: 2, maxAnonymousBodyBytes: 2048 },
    });
    port = await listening(service);
    key = service.key ?? "";
  });
  after(() => service.close());

  test("a declared length over the limit → 413 before 100 Continue (never uploaded)", async () => {
    const client = await RawClient.open(port);
    client.send(head("POST", "/verify", `X-SVC-Key: ${key}\r\nExpect: 100-continue\r\n`, 2 * MIB));
    assert.ok(await client.closedWithin());
    const responses = client.responses();
    assert.deepEqual(
      responses.map((response) => response.status),
      [413],
    );
    assert.deepEqual(jsonOf(responses[0]), { error: "body_too_large", limit: MIB });
  });

  test("anonymous POST /mcp: a body over the anonymous limit → 413 before it is read", async () => {
    const client = await RawClient.open(port);
    const mcp = "Content-Type: application/json\r\nAccept: application/json\r\n";
    client.send(`${head("POST", "/mcp", mcp, 500_000)}{`);
    assert.ok(await client.closedWithin());
    const [response] = client.responses();
    assert.equal(response?.status, 413);
    assert.deepEqual(jsonOf(response), { error: "body_too_large", limit: 2048 });
  });

  test("anonymous POST /mcp: a chunked body is cut off at the anonymous limit", async () => {
    const response = await fetch(`http://127.0.0.1:${port}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json" },
      body: new ReadableStream({
        start(controller) {
          controller.enqueue(new TextEncoder().encode(`[${" ".repeat(4096)}`));
          controller.close();
        },
      }),
      duplex: "half",
    } as RequestInit);
    assert.equal(response.status, 413);
    assert.deepEqual(await response.json(), { error: "body_too_large", limit: 2048 });
  });

  test("discovery stays keyless, and a key lifts the anonymous limit", async () => {
    const list = { jsonrpc: "2.0", id: 1, method: "tools/list" };
    const anonymous = await fetch(`http://127.0.0.1:${port}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify(list),
    });
    assert.equal(anonymous.status, 200);
    const padded = `${JSON.stringify(list)}${" ".repeat(8192)}`;
    const keyed = await fetch(`http://127.0.0.1:${port}/mcp`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json",
        "x-svc-key": key,
      },
      body: padded,
    });
    assert.equal(keyed.status, 200);
  });

  test("a non-loopback POST /payment-receipts is refused before its body is read", async () => {
    // A body that never ends: an answer can only come from a check made before reading it.
    const body = new PassThrough();
    body.write("{");
    const response = await service.app.inject({
      method: "POST",
      url: "/payment-receipts",
      remoteAddress: "203.0.113.9",
      headers: { "content-type": "application/json", "content-length": "1000000" },
      payload: body,
    });
    assert.equal(response.statusCode, 403);
    assert.equal(response.json().error, "loopback_only");
    body.destroy();
  });

  test("past the memory budget, a new request is refused 503 before its body; /health answers", async () => {
    const budget = service.app.memoryBudget;
    const holder = await RawClient.open(port);
    holder.send(`${head("POST", "/verify", `X-SVC-Key: ${key}\r\n`, 700_000)}{`);
    assert.ok(await until(() => budget.used >= 700_000));

    const refused = await RawClient.open(port, "127.0.1.9");
    refused.send(`${head("POST", "/verify", `X-SVC-Key: ${key}\r\n`, 700_000)}{`);
    assert.ok(await refused.closedWithin());
    const [response] = refused.responses();
    assert.equal(response?.status, 503);
    assert.equal(response?.headers["retry-after"], "1");
    assert.equal((jsonOf(response) as { error: string }).error, "memory_budget_exceeded");
    const health = await fetch(`http://127.0.0.1:${port}/health`);
    assert.equal(health.status, 200);

    holder.destroy();
    assert.ok(await until(() => budget.used === 0), "the held body was not given back");
    assert.equal((await keyedVerify(port, "127.0.1.9", key))?.status, 200);
    assert.ok(await until(() => budget.used === 0), "the answer was not given back");
  });

  test("a key sends at most N crystal bodies at once; more → 429 too_many_uploads", async () => {
    const crystal = `X-SVC-Key: ${key}\r\nContent-Type: application/json\r\n`;
    const uploads = [];
    for (let index = 0; index < 2; index += 1) {
      const client = await RawClient.open(port);
      client.send(`${head("POST", "/crystals", crystal, 10_000)}{`);
      uploads.push(client);
    }
    try {
      assert.ok(await until(() => service.app.memoryBudget.used >= 20_000));
      const third = await RawClient.open(port);
      third.send(`${head("POST", "/crystals", crystal, 10_000)}{`);
      assert.ok(await third.closedWithin());
      const [response] = third.responses();
      assert.equal(response?.status, 429);
      assert.equal(response?.headers["retry-after"], "1");
      assert.deepEqual(jsonOf(response), {
        error: "too_many_uploads",
        detail:
          "this key is already sending as many bodies as it may at once; retry when one is answered",
        limit: 2,
      });
    } finally {
      for (const client of uploads) client.destroy();
    }
    // Once they are gone, the key may upload again (this body is not an envelope: 400).
    assert.ok(await until(() => service.app.memoryBudget.used === 0));
    const again = await fetch(`http://127.0.0.1:${port}/crystals`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-svc-key": key },
      body: "{}",
    });
    assert.equal(again.status, 400);
  });
});

describe("a client that reads its answers at a trickle is closed", () => {
  let service: TestService;
  let port: number;
  before(async () => {
    service = await startTestService({
      // Far above what a trickle reads, so that the rate, not the idle timeout, closes it.
      http: { ...LONG, idleTimeoutMs: 1000, minReadBytesPerSecond: 64 * 1024 * 1024 },
    });
    port = await listening(service);
  });
  after(() => service.close());

  test("pipelined answers read one chunk every 100 ms: the connection is closed", async () => {
    const client = await RawClient.open(port);
    client.socket.pause();
    // ~72 KB per answer, 400 of them: far more than the kernel buffers hold both ways.
    client.send("GET /openapi.json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".repeat(400));
    const connections = service.app.connections;
    // A read every 100 ms keeps the socket busy: the idle timeout never fires. At most 150 reads.
    // (The client sees the close only once it has drained its kernel's buffer; the server's
    // count is what says the connection is gone.)
    for (let reads = 0; reads < 150 && connections.counts().admitted > 0; reads += 1) {
      client.socket.read();
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.equal(connections.counts().admitted, 0, "the trickle reader was never closed");
    assert.ok(await until(() => service.app.memoryBudget.used === 0), "answers still held");
    client.socket.resume();
    assert.ok(await client.closedWithin());
    assert.ok(client.responses().length < 400);
  });
});

describe("the metrics listener's own cap", () => {
  test("past METRICS_MAX_CONNECTIONS a connection is closed; refusals close theirs", async () => {
    const server = await startMetricsServer(
      { host: "127.0.0.1", port: 0, token: "a-metrics-token-of-16", maxConnections: 3 },
      async () => "",
    );
    const port = Number(new URL(server.url).port);
    const held: RawClient[] = [];
    try {
      for (let index = 0; index < 3; index += 1) held.push(await RawClient.open(port));
      const extra = await RawClient.open(port);
      assert.ok(await extra.closedWithin(), "a connection past the cap was kept");
      assert.deepEqual(extra.responses(), []);
      // A request without the token is answered 401, and the connection goes with it.
      const first = held[0];
      assert.ok(first);
      first.send("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
      assert.ok(await first.closedWithin());
      assert.equal(first.responses()[0]?.status, 401);
      // Silent connections are closed by the headers deadline.
      assert.ok(await held[1]?.closedWithin());
    } finally {
      for (const client of held) client.destroy();
      await server.close();
    }
  });
});

describe("a proxy named in TRUST_PROXY has no share of its own", () => {
  let service: TestService;
  let port: number;
  before(async () => {
    service = await startTestService({
      trustProxy: ["127.0.1.20"],
      http: { ...LONG, maxConnections: 12, maxConnectionsPerAddress: 2 },
    });
    port = await listening(service);
  });
  after(() => service.close());

  test("the proxy holds more connections than one address's share, and is served", async () => {
    const clients = await idleKeepAlive(port, "127.0.1.20", 4);
    try {
      const response = await keyedVerify(port, "127.0.1.20", service.key ?? "");
      assert.equal(response?.status, 200);
      assert.ok(clients.every((client) => !client.closed));
      assert.ok(await until(() => service.app.connections.counts().admitted === 4));
    } finally {
      for (const client of clients) client.destroy();
    }
  });
});
