/**
 * Hostile load over real sockets (issue 16): receive deadlines and the idle timeout close
 * stalled connections, a refusal closes its connection instead of reading the body, the
 * connection cap answers cleanly and keeps a reserve for `/health`, Node's own refusals come
 * in the service's `{error, detail}` shape, `100 Continue` follows the credential check, and a
 * repeated `Authorization` is refused.
 *
 * Timeouts are configured short (a few hundred milliseconds) so that closures happen quickly;
 * the tests assert that they happen, within generous bounded waits, never how fast.
 */
import assert from "node:assert/strict";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { BroadcastChannel } from "node:worker_threads";
import type { HttpServerConfig } from "../../src/service/config.js";
import { corpusBytes } from "../support/corpus.js";
import { GATE_CHANNEL, GATE_OPEN, TASK_WAITING } from "./fixtures/verify-gate.js";
import { jsonOf, type ParsedResponse, RawClient, until } from "./support/raw-client.js";
import { fixtureTaskModule, startTestService, type TestService } from "./support/service.js";

const BUNDLE = corpusBytes("vectors/01_happy_minimal.json");

/**
 * Each deadline well apart from the others, so that each test meets the one it is about: the
 * headers deadline first, then the idle timeout, then the request deadline.
 */
const SHORT: Partial<HttpServerConfig> = {
  headersTimeoutMs: 300,
  idleTimeoutMs: 1000,
  requestTimeoutMs: 5000,
  keepAliveTimeoutMs: 300,
};

/** Long enough that, within WAIT_LIMIT_MS, no timeout can be what closed a connection. */
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

function verifyHead(extra: string, contentLength: number): string {
  return `POST /verify HTTP/1.1\r\nHost: 127.0.0.1\r\n${extra}Content-Length: ${contentLength}\r\n\r\n`;
}

describe("stalled clients are closed (short timeouts)", () => {
  let service: TestService;
  let port: number;
  let keyHeader: string;
  before(async () => {
    service = await startTestService({ http: SHORT });
    port = await listening(service);
    keyHeader = `X-SVC-Key: ${service.key}\r\n`;
  });
  after(() => service.close());

  test("a body that stops after one byte → 408 request_timeout (idle), connection closed", async () => {
    const client = await RawClient.open(port);
    client.send(`${verifyHead(keyHeader, 1_000_000)}{`);
    assert.ok(await client.closedWithin(), "the stalled connection was never closed");
    const [response] = client.responses();
    assert.equal(response?.status, 408);
    assert.equal(response?.headers.connection, "close");
    assert.deepEqual(jsonOf(response), {
      error: "request_timeout",
      detail: "the request did not arrive in time",
    });
  });

  test("a body that keeps trickling is closed by the request deadline", async () => {
    const client = await RawClient.open(port);
    client.send(`${verifyHead(keyHeader, 1_000_000)}{`);
    // One byte every 50 ms keeps the socket from ever being idle; at most 300 of them (15 s).
    for (let sent = 0; sent < 300 && !client.closed; sent += 1) {
      client.send(" ");
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    assert.ok(await client.closedWithin(), "the trickling connection was never closed");
    assert.equal(client.responses()[0]?.status, 408);
  });

  test("headers that never end → 408, connection closed", async () => {
    const client = await RawClient.open(port);
    client.send("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ");
    assert.ok(await client.closedWithin());
    assert.deepEqual(jsonOf(client.responses()[0]), {
      error: "request_timeout",
      detail: "the request did not arrive in time",
    });
  });

  test("a connection that sends nothing is closed", async () => {
    const client = await RawClient.open(port);
    assert.ok(await client.closedWithin());
  });

  test("an idle keep-alive connection is closed after its answer", async () => {
    const client = await RawClient.open(port);
    client.send("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    assert.ok(await client.closedWithin());
    assert.equal(client.responses()[0]?.status, 200);
  });

  test("a client that sends a body and never reads the answer is closed", async () => {
    const client = await RawClient.open(port);
    client.socket.pause();
    client.send(verifyHead(keyHeader, BUNDLE.length));
    client.send(BUNDLE);
    const connections = service.app.connections;
    assert.ok(await until(() => connections.counts().admitted === 0));
    client.socket.resume();
    assert.ok(await client.closedWithin());
  });

  test("a client that never reads its answers is closed by the idle timeout", async () => {
    const client = await RawClient.open(port);
    client.socket.pause();
    // ~72 KB per answer: 400 of them are far more than the kernel buffers both ways hold, so
    // the server ends up with an answer it cannot write.
    client.send("GET /openapi.json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".repeat(400));
    const connections = service.app.connections;
    assert.ok(
      await until(() => connections.counts().admitted === 0),
      "the server still holds the connection of a client that does not read",
    );
    client.socket.resume();
    assert.ok(await client.closedWithin());
    assert.ok(client.responses().length < 400);
  });

  test("/health answers while 200 stalled connections are held", async () => {
    const stalled = await Promise.all(Array.from({ length: 200 }, () => RawClient.open(port)));
    try {
      for (const client of stalled) client.send(`${verifyHead(keyHeader, 1_000_000)}{`);
      const response = await fetch(`http://127.0.0.1:${port}/health`);
      assert.equal(response.status, 200);
      assert.deepEqual(await response.json(), { ok: true });
    } finally {
      for (const client of stalled) client.destroy();
    }
  });
});

describe("the service's own silence is not a stall", () => {
  let service: TestService;
  let port: number;
  let gate: BroadcastChannel;
  let taskWaiting = false;
  before(async () => {
    gate = new BroadcastChannel(GATE_CHANNEL);
    gate.onmessage = (event) => {
      if ((event as MessageEvent).data === TASK_WAITING) taskWaiting = true;
    };
    service = await startTestService({
      http: SHORT,
      cpuPool: { threads: 1, taskModules: { verify: fixtureTaskModule("gated-verify-worker") } },
    });
    port = await listening(service);
  });
  after(async () => {
    gate.close();
    await service.close();
  });

  test("a complete request the service takes long to answer is answered", async () => {
    const client = await RawClient.open(port);
    try {
      client.send(verifyHead(`X-SVC-Key: ${service.key}\r\n`, BUNDLE.length));
      client.send(BUNDLE);
      assert.ok(await until(() => taskWaiting), "the task never started");
      // Nothing moves on the socket for three idle timeouts while the task is held.
      await new Promise((resolve) => setTimeout(resolve, 3 * (SHORT.idleTimeoutMs ?? 0)));
      assert.equal(client.closed, false, "the connection was closed while the service worked");
      gate.postMessage(GATE_OPEN);
      const [response] = await client.responsesArrived(1);
      assert.equal(response?.status, 200);
      assert.equal((jsonOf(response) as { verdict: string }).verdict, "TRUSTED");
    } finally {
      client.destroy();
    }
  });
});

describe("refusals close their connection (long timeouts)", () => {
  let service: TestService;
  let port: number;
  let key: string;
  before(async () => {
    service = await startTestService({ http: LONG });
    port = await listening(service);
    key = service.key ?? "";
  });
  after(() => service.close());

  test("no key, 1,000,000 bytes declared, 1 sent → 401 and the connection is closed", async () => {
    const client = await RawClient.open(port);
    client.send(`${verifyHead("", 1_000_000)}{`);
    // The timeouts are a minute: only the refusal itself can close this connection in time.
    assert.ok(await client.closedWithin(), "the refused connection was held open");
    const [response] = client.responses();
    assert.equal(response?.status, 401);
    assert.equal(response?.headers.connection, "close");
    assert.equal((jsonOf(response) as { error: string }).error, "missing_key");
  });

  test("a declared length over the limit → 413 and the connection is closed", async () => {
    const client = await RawClient.open(port);
    client.send(`${verifyHead(`X-SVC-Key: ${key}\r\n`, 64 * 1_048_576)}{}`);
    assert.ok(await client.closedWithin());
    const [response] = client.responses();
    assert.equal(response?.status, 413);
    assert.equal(response?.headers.connection, "close");
  });

  test("a refused upload that keeps sending gets its answer, then the connection closes", async () => {
    // The client writes its whole 1 MiB body while the server has already refused it: the
    // lingering close lets the answer arrive instead of a reset racing it.
    const client = await RawClient.open(port);
    client.send(verifyHead("", 1_048_576));
    client.send(Buffer.alloc(1_048_576, " "));
    assert.ok(await client.closedWithin());
    assert.equal(client.responses()[0]?.status, 401);
  });

  test("an accepted request keeps the connection alive", async () => {
    const client = await RawClient.open(port);
    try {
      client.send(`${verifyHead(`X-SVC-Key: ${key}\r\n`, BUNDLE.length)}`);
      client.send(BUNDLE);
      const [response] = await client.responsesArrived(1);
      assert.equal(response?.status, 200);
      assert.notEqual(response?.headers.connection, "close");
      assert.equal(client.closed, false);
    } finally {
      client.destroy();
    }
  });

  for (const [name, headers] of [
    ["two different keys", "Authorization: Bearer KEY\r\nAuthorization: Bearer svc_other\r\n"],
    ["the same key twice", "Authorization: Bearer KEY\r\nAuthorization: Bearer KEY\r\n"],
  ] as const) {
    test(`two Authorization headers (${name}) → 400 conflicting_credentials, nothing charged`, async () => {
      const first = await service.app.inject({ method: "POST", url: "/verify", payload: BUNDLE });
      const remaining = Number(first.headers["x-ratelimit-remaining"]);
      const client = await RawClient.open(port);
      client.send(verifyHead(headers.replaceAll("KEY", key), BUNDLE.length));
      client.send(BUNDLE);
      assert.ok(await client.closedWithin());
      const [response] = client.responses();
      assert.equal(response?.status, 400);
      assert.deepEqual(jsonOf(response), {
        error: "conflicting_credentials",
        detail: "the Authorization header is repeated; send one credential",
        docs: "README.md#access-and-payments",
      });
      const next = await service.app.inject({ method: "POST", url: "/verify", payload: BUNDLE });
      assert.equal(Number(next.headers["x-ratelimit-remaining"]), remaining - 1);
    });
  }

  test("Expect: 100-continue without a key → 401, never a 100 Continue", async () => {
    const client = await RawClient.open(port);
    client.send(verifyHead("Expect: 100-continue\r\n", BUNDLE.length));
    assert.ok(await client.closedWithin());
    const responses = client.responses();
    assert.deepEqual(
      responses.map((response) => response.status),
      [401],
    );
  });

  test("Expect: 100-continue with a key → 100 Continue, then the answer", async () => {
    const client = await RawClient.open(port);
    try {
      client.send(verifyHead(`X-SVC-Key: ${key}\r\nExpect: 100-continue\r\n`, BUNDLE.length));
      const [interim] = await client.responsesArrived(1);
      assert.equal(interim?.status, 100);
      client.send(BUNDLE);
      const responses = await client.responsesArrived(2);
      assert.equal(responses[1]?.status, 200);
      assert.equal((jsonOf(responses[1]) as { verdict: string }).verdict, "TRUSTED");
    } finally {
      client.destroy();
    }
  });

  test("an unknown expectation → 417 expectation_failed", async () => {
    const client = await RawClient.open(port);
    client.send(verifyHead(`X-SVC-Key: ${key}\r\nExpect: something-else\r\n`, 2));
    assert.ok(await client.closedWithin());
    const [response] = client.responses();
    assert.equal(response?.status, 417);
    assert.deepEqual(jsonOf(response), {
      error: "expectation_failed",
      detail: "the only expectation served is 100-continue",
    });
  });
});

describe("Node's own refusals in the service's shape", () => {
  let service: TestService;
  let port: number;
  before(async () => {
    service = await startTestService({ http: LONG });
    port = await listening(service);
  });
  after(() => service.close());

  async function refusalOf(request: string | Buffer): Promise<ParsedResponse | undefined> {
    const client = await RawClient.open(port);
    client.send(request);
    assert.ok(await client.closedWithin(), "the refused connection was held open");
    const [response] = client.responses();
    assert.equal(response?.headers.connection, "close");
    return response;
  }

  test("an invalid header character → 400 bad_request", async () => {
    const response = await refusalOf("GET /health HTTP/1.1\r\nHost: a\r\nX-Bad: a\u0001b\r\n\r\n");
    assert.equal(response?.status, 400);
    assert.deepEqual(jsonOf(response), {
      error: "bad_request",
      detail: "malformed HTTP request: Invalid header value char",
    });
  });

  test("not HTTP at all → 400 bad_request", async () => {
    const response = await refusalOf("HELLO\r\n\r\n");
    assert.equal(response?.status, 400);
    assert.equal((jsonOf(response) as { error: string }).error, "bad_request");
  });

  test("an HTTP/1.1 request without Host → 400 bad_request", async () => {
    const response = await refusalOf("GET /health HTTP/1.1\r\n\r\n");
    assert.equal(response?.status, 400);
    assert.ok(response?.headers["x-request-id"]);
    assert.deepEqual(jsonOf(response), {
      error: "bad_request",
      detail: "an HTTP/1.1 request must carry a Host header",
    });
  });

  test("two Host headers → 400 bad_request", async () => {
    const response = await refusalOf("GET /health HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n");
    assert.equal(response?.status, 400);
    assert.deepEqual(jsonOf(response), {
      error: "bad_request",
      detail: "the Host header is repeated",
    });
  });

  test("headers over Node's limit → 431 headers_too_large", async () => {
    const response = await refusalOf(
      `GET /health HTTP/1.1\r\nHost: a\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`,
    );
    assert.equal(response?.status, 431);
    assert.deepEqual(jsonOf(response), {
      error: "headers_too_large",
      detail: "the request line and headers exceed the server's limit",
    });
  });

  test("an HTTP/1.0 request without Host is served", async () => {
    const client = await RawClient.open(port);
    client.send("GET /health HTTP/1.0\r\n\r\n");
    assert.ok(await client.closedWithin());
    assert.equal(client.responses()[0]?.status, 200);
  });
});

describe("the connection cap", () => {
  const MAX = 3;
  /** A quarter of it, 2, is one address's share of the reserve. */
  const RESERVE = 8;
  let service: TestService;
  let port: number;
  const held: RawClient[] = [];
  before(async () => {
    service = await startTestService({
      http: { ...LONG, maxConnections: MAX, healthReserveConnections: RESERVE },
    });
    port = await listening(service);
  });
  after(async () => {
    for (const client of held) client.destroy();
    await service.close();
  });

  const counts = () => service.app.connections.counts();

  test("fill the cap with stalled bodies (requests in progress: none is idle)", async () => {
    for (let index = 0; index < MAX; index += 1) {
      const client = await RawClient.open(port);
      client.send(`${verifyHead(`X-SVC-Key: ${service.key}\r\n`, 1_000_000)}{`);
      held.push(client);
    }
    // Each body admitted: every request is in progress.
    assert.ok(await until(() => service.app.memoryBudget.used >= MAX * 1_000_000));
  });

  test("past the cap, GET /health is still answered (then the connection closes)", async () => {
    const client = await RawClient.open(port);
    client.send("GET /health HTTP/1.1\r\nHost: a\r\n\r\n");
    assert.ok(await client.closedWithin());
    const [response] = client.responses();
    assert.equal(response?.status, 200);
    assert.equal(response?.headers.connection, "close");
    assert.deepEqual(jsonOf(response), { ok: true });
  });

  test("past the cap, anything else → 503 too_many_connections", async () => {
    const client = await RawClient.open(port);
    client.send(verifyHead(`X-SVC-Key: ${service.key}\r\n`, BUNDLE.length));
    client.send(BUNDLE);
    assert.ok(await client.closedWithin());
    const [response] = client.responses();
    assert.equal(response?.status, 503);
    assert.equal(response?.headers["retry-after"], "1");
    assert.deepEqual(jsonOf(response), {
      error: "too_many_connections",
      detail: "the server holds as many connections as it serves; retry shortly",
    });
  });

  test("past the reserve too, a new connection gets the 503 before it sends anything", async () => {
    const reserve: RawClient[] = [];
    try {
      // Four addresses, each with its share of the reserve.
      for (let index = 0; index < RESERVE; index += 1) {
        reserve.push(await RawClient.open(port, `127.0.1.${1 + (index % 4)}`));
      }
      assert.ok(await until(() => counts().reserve === RESERVE));
      const refusedBefore = counts().refused;
      const client = await RawClient.open(port);
      assert.ok(await client.closedWithin());
      assert.equal(counts().refused, refusedBefore + 1);
      const [response] = client.responses();
      assert.equal(response?.status, 503);
      assert.equal((jsonOf(response) as { error: string }).error, "too_many_connections");
    } finally {
      for (const client of reserve) client.destroy();
    }
  });

  test("reserve connections that send nothing do not stay", async () => {
    assert.ok(await until(() => counts().reserve === 0));
    const client = await RawClient.open(port);
    assert.ok(await until(() => counts().reserve === 1 || client.closed));
    assert.ok(await client.closedWithin());
    assert.ok(await until(() => counts().reserve === 0));
    assert.deepEqual(client.responses(), []);
  });

  test("once the stalled connections go, requests are served again", async () => {
    for (const client of held.splice(0)) client.destroy();
    assert.ok(await until(() => counts().admitted === 0));
    const response = await fetch(`http://127.0.0.1:${port}/verify`, {
      method: "POST",
      body: BUNDLE,
      headers: service.authHeaders,
    });
    assert.equal(response.status, 200);
  });
});
