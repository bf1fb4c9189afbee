/**
 * Logs are content-free (service.md §9): a request with secrets in its body, query string,
 * path, headers and client address leaves none of them in the log, only the method, the
 * route template, the status, the latency and the request id.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { corpusBytes } from "../../support/corpus.js";
import { fixtureTaskModule, startTestService, type TestService } from "../support/service.js";

const SECRETS = [
  "QUERY-SECRET-1",
  "BODY-SECRET-2",
  "HEADER-SECRET-3",
  "203.0.113.77",
  "PATH-SECRET-5",
  "UA-SECRET-6",
  "FAULT-SECRET-7",
];
const CLIENT_ADDRESS = "198.51.100.23";

const ACCESS_LINE_KEYS = [
  "hostname",
  "level",
  "method",
  "msg",
  "pid",
  "reqId",
  "responseTimeMs",
  "route",
  "status",
  "time",
];

/** A valid bundle with a secret in an extra top-level member. */
function bundleWithSecret(): Buffer {
  const text = corpusBytes("vectors/01_happy_minimal.json").toString("utf8");
  return Buffer.from(`{"note": "BODY-SECRET-2", ${text.slice(text.indexOf("{") + 1)}`);
}

/** Headers that carry secrets, the service's real API key among them (it must not leak). */
function secretHeaders(service: TestService): Record<string, string> {
  return {
    "content-type": "application/json",
    authorization: `Bearer ${service.key}`,
    "x-svc-key": String(service.key),
    "x-forwarded-for": "203.0.113.77",
    "user-agent": "UA-SECRET-6",
  };
}

async function capturingService(verifyTaskModule?: string) {
  const lines: string[] = [];
  const service = await startTestService({
    logLevel: "info",
    logDestination: { write: (line) => lines.push(line) },
    ...(verifyTaskModule ? { cpuPool: { taskModules: { verify: verifyTaskModule } } } : {}),
  });
  return { service, lines };
}

function assertNoSecrets(log: string): void {
  for (const secret of [...SECRETS, CLIENT_ADDRESS]) {
    assert.ok(!log.includes(secret), `the log contains ${secret}:\n${log}`);
  }
}

describe("logging", () => {
  let service: TestService;
  let lines: string[];
  before(async () => {
    ({ service, lines } = await capturingService());
  });
  after(() => service.close());

  test("one content-free line per request", async () => {
    const requests = [
      {
        method: "POST" as const,
        url: "/verify?receipt=1&api_key=QUERY-SECRET-1",
        payload: bundleWithSecret(),
      },
      {
        method: "POST" as const,
        url: "/verify?x=QUERY-SECRET-1",
        payload: '{"BODY-SECRET-2": 1, "BODY-SECRET-2": 2}',
      },
      { method: "GET" as const, url: "/PATH-SECRET-5?q=QUERY-SECRET-1" },
    ];
    const statuses = [];
    for (const request of requests) {
      const response = await service.app.inject({
        ...request,
        headers: secretHeaders(service),
        remoteAddress: CLIENT_ADDRESS,
      });
      statuses.push(response.statusCode);
    }
    assert.deepEqual(statuses, [200, 400, 404]);

    const log = lines.join("");
    assertNoSecrets(log);
    assert.ok(!log.includes(String(service.key)));
    const entries = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    assert.deepEqual(
      entries.map(({ method, route, status }) => ({ method, route, status })),
      [
        { method: "POST", route: "/verify", status: 200 },
        { method: "POST", route: "/verify", status: 400 },
        { method: "GET", route: null, status: 404 },
      ],
    );
    for (const entry of entries) {
      assert.deepEqual(Object.keys(entry).sort(), ACCESS_LINE_KEYS);
      assert.equal(typeof entry.responseTimeMs, "number");
      assert.equal(entry.msg, "request completed");
    }
  });
});

describe("logging an unexpected fault", () => {
  let service: TestService;
  let lines: string[];
  before(async () => {
    ({ service, lines } = await capturingService(fixtureTaskModule("failing-verify-worker")));
  });
  after(() => service.close());

  test("records the fault's type and place, not its message", async () => {
    const response = await service.app.inject({
      method: "POST",
      url: "/verify?token=QUERY-SECRET-1",
      payload: bundleWithSecret(),
      headers: secretHeaders(service),
      remoteAddress: CLIENT_ADDRESS,
    });
    assert.equal(response.statusCode, 500);
    assertNoSecrets(lines.join(""));
    assert.ok(!lines.join("").includes(String(service.key)));
    const entries = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    const fault = entries.find((entry) => entry.msg === "unexpected fault");
    assert.ok(fault, "the fault is logged");
    assert.equal(fault.reqId, response.headers["x-request-id"]);
    const error = fault.err as { type: string; stack: string };
    assert.equal(error.type, "Error");
    assert.match(error.stack, /failing-verify-worker/);
    const access = entries.find((entry) => entry.msg === "request completed");
    assert.deepEqual(
      { method: access?.method, route: access?.route, status: access?.status },
      { method: "POST", route: "/verify", status: 500 },
    );
  });
});
