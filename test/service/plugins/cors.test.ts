/**
 * Browser access (issue 14): real preflights and real cross-origin calls over a socket, as a
 * browser sends them. CORS is off by default; with `CORS_ORIGINS` an allowed origin may send
 * the credential and payment headers and read the rate-limit and payment headers, without a
 * key for the preflight and without paying or being counted for it.
 */
import assert from "node:assert/strict";
import { request as httpRequest, type IncomingHttpHeaders } from "node:http";
import { after, before, describe, test } from "node:test";
import { loadConfig } from "../../../src/service/config.js";
import { testSettings } from "../../payments/support.js";
import { corpusBytes } from "../../support/corpus.js";
import { startTestService, type TestService } from "../support/service.js";

const ALLOWED = "https://app.example";
const OTHER = "https://evil.example";
const GOOD = corpusBytes("vectors/01_happy_minimal.json");

interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

function send(
  port: number,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: Buffer,
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const request = httpRequest({ host: "127.0.0.1", port, method, path, headers }, (response) => {
      const chunks: Buffer[] = [];
      response.on("data", (chunk: Buffer) => chunks.push(chunk));
      response.on("end", () =>
        resolve({
          status: response.statusCode ?? 0,
          headers: response.headers,
          body: Buffer.concat(chunks).toString("utf8"),
        }),
      );
    });
    request.on("error", reject);
    request.end(body);
  });
}

/** The comma list of a header, lower-cased, as a browser reads it. */
function listOf(value: string | string[] | undefined): string[] {
  return String(value ?? "")
    .split(",")
    .map((item) => item.trim().toLowerCase())
    .filter((item) => item !== "");
}

function preflight(origin: string, method: string, headers: string): Record<string, string> {
  return {
    origin,
    "access-control-request-method": method,
    "access-control-request-headers": headers,
  };
}

async function listening(service: TestService): Promise<number> {
  await service.app.listen({ port: 0, host: "127.0.0.1" });
  const address = service.app.server.address();
  assert.ok(address !== null && typeof address === "object");
  return address.port;
}

describe("CORS configuration", () => {
  test("off by default; a list of origins, or '*' alone", () => {
    assert.deepEqual(loadConfig({}).cors, { origins: [], maxAgeSeconds: 600 });
    assert.deepEqual(
      loadConfig({ CORS_ORIGINS: "https://a.example, http://localhost:5173" }).cors,
      {
        origins: ["https://a.example", "http://localhost:5173"],
        maxAgeSeconds: 600,
      },
    );
    assert.equal(loadConfig({ CORS_ORIGINS: " * " }).cors.origins, "*");
    assert.throws(() => loadConfig({ CORS_ORIGINS: "*,https://a.example" }), /'\*' alone/);
    assert.throws(() => loadConfig({ CORS_ORIGINS: "https://a.example/path" }), /CORS_ORIGINS/);
    assert.throws(() => loadConfig({ CORS_MAX_AGE_SECONDS: "soon" }), /CORS_MAX_AGE_SECONDS/);
  });
});

describe("CORS off (the default)", () => {
  let service: TestService;
  let port: number;
  before(async () => {
    service = await startTestService({}, { anonymous: true });
    port = await listening(service);
  });
  after(() => service.close());

  test("a preflight is an OPTIONS the path does not offer: 405, no CORS headers", async () => {
    const reply = await send(port, "OPTIONS", "/verify", preflight(ALLOWED, "POST", "x-svc-key"));
    assert.equal(reply.status, 405);
    assert.equal(reply.headers.allow, "POST");
    assert.equal(JSON.parse(reply.body).error, "method_not_allowed");
    assert.equal(reply.headers["access-control-allow-origin"], undefined);
  });

  test("the server card stays open to any origin", async () => {
    const reply = await send(port, "OPTIONS", "/.well-known/mcp/server-card.json", {
      origin: OTHER,
      "access-control-request-method": "GET",
    });
    assert.equal(reply.status, 204);
    assert.equal(reply.headers["access-control-allow-origin"], "*");
  });
});

describe("CORS_ORIGINS set", () => {
  let service: TestService;
  let port: number;
  let key: string;
  before(async () => {
    service = await startTestService(
      {
        cors: { origins: [ALLOWED], maxAgeSeconds: 600 },
        payments: {
          settings: testSettings(),
          facilitatorUrl: null,
          publicBaseUrl: "https://receiptd.example",
        },
      },
      { anonymous: true },
    );
    key = (await service.app.accessServices.keys.create({ name: "cors" })).key;
    port = await listening(service);
  });
  after(() => service.close());

  test("a preflight from an allowed origin needs no key and allows the credential headers", async () => {
    const asked = "authorization, content-type, x-svc-key, payment-signature, x-payment";
    const reply = await send(port, "OPTIONS", "/verify", preflight(ALLOWED, "POST", asked));
    assert.equal(reply.status, 204, reply.body);
    assert.equal(reply.body, "");
    assert.equal(reply.headers["access-control-allow-origin"], ALLOWED);
    assert.ok(listOf(reply.headers["access-control-allow-methods"]).includes("post"));
    const allowed = listOf(reply.headers["access-control-allow-headers"]);
    for (const header of [
      ...listOf(asked),
      "x-pass-token",
      "mcp-protocol-version",
      "if-none-match",
    ]) {
      assert.ok(allowed.includes(header), `${header} is not allowed: ${allowed.join(", ")}`);
    }
    assert.equal(reply.headers["access-control-max-age"], "600");
    assert.equal(reply.headers["access-control-allow-credentials"], undefined);
    assert.ok(listOf(reply.headers.vary).includes("origin"));
    // Not counted: no bucket was charged, so no rate-limit headers.
    assert.equal(reply.headers["x-ratelimit-remaining"], undefined);
    assert.ok(reply.headers["x-request-id"]);
  });

  test("preflights are never charged to the anonymous bucket", async () => {
    const before = await send(port, "GET", "/info", { origin: ALLOWED });
    for (let i = 0; i < 3; i++) {
      const reply = await send(
        port,
        "OPTIONS",
        "/crystals",
        preflight(ALLOWED, "POST", "x-pass-token"),
      );
      assert.equal(reply.status, 204);
    }
    const refused = await send(port, "OPTIONS", "/verify", preflight(OTHER, "POST", "x-svc-key"));
    assert.equal(refused.status, 405);
    const afterwards = await send(port, "GET", "/info", { origin: ALLOWED });
    assert.equal(
      Number(afterwards.headers["x-ratelimit-remaining"]),
      Number(before.headers["x-ratelimit-remaining"]) - 1,
      "only the second GET /info was counted",
    );
  });

  test("a preflight from another origin gets no CORS headers (the OPTIONS' 405)", async () => {
    const reply = await send(port, "OPTIONS", "/verify", preflight(OTHER, "POST", "x-svc-key"));
    assert.equal(reply.status, 405);
    assert.equal(reply.headers.allow, "POST");
    assert.equal(JSON.parse(reply.body).error, "method_not_allowed");
    assert.equal(reply.headers["access-control-allow-origin"], undefined);
    assert.equal(reply.headers["access-control-allow-headers"], undefined);
  });

  test("a keyed call from an allowed origin exposes the rate-limit headers", async () => {
    const reply = await send(
      port,
      "POST",
      "/verify",
      { origin: ALLOWED, "content-type": "application/json", "x-svc-key": key },
      GOOD,
    );
    assert.equal(reply.status, 200, reply.body);
    assert.equal(reply.headers["access-control-allow-origin"], ALLOWED);
    const exposed = listOf(reply.headers["access-control-expose-headers"]);
    for (const header of [
      "x-ratelimit-limit",
      "x-ratelimit-remaining",
      "x-ratelimit-reset",
      "x-request-id",
      "payment-response",
      "x-payment-response",
    ]) {
      assert.ok(exposed.includes(header), `${header} is not exposed`);
    }
    assert.ok(reply.headers["x-ratelimit-remaining"]);
  });

  test("a 402 exposes PAYMENT-REQUIRED to an allowed origin", async () => {
    const reply = await send(
      port,
      "POST",
      "/verify",
      { origin: ALLOWED, "content-type": "application/json" },
      GOOD,
    );
    assert.equal(reply.status, 402, reply.body);
    assert.equal(JSON.parse(reply.body).error, "payment_required");
    assert.ok(reply.headers["payment-required"], "the challenge header is sent");
    assert.equal(reply.headers["access-control-allow-origin"], ALLOWED);
    assert.ok(listOf(reply.headers["access-control-expose-headers"]).includes("payment-required"));
  });

  test("a call from another origin is answered without CORS headers", async () => {
    const reply = await send(port, "GET", "/health", { origin: OTHER });
    assert.equal(reply.status, 200);
    assert.equal(reply.headers["access-control-allow-origin"], undefined);
    assert.equal(reply.headers["access-control-expose-headers"], undefined);
  });

  test("the server card keeps its own CORS answers", async () => {
    const reply = await send(port, "OPTIONS", "/.well-known/mcp/server-card.json", {
      origin: OTHER,
      "access-control-request-method": "GET",
    });
    assert.equal(reply.status, 204);
    assert.equal(reply.headers["access-control-allow-origin"], "*");
    assert.equal(reply.headers["access-control-allow-headers"], "Content-Type, If-None-Match");
    const card = await send(port, "GET", "/.well-known/mcp/server-card.json", { origin: ALLOWED });
    assert.equal(card.headers["access-control-allow-origin"], "*");
    assert.equal(card.headers["access-control-expose-headers"], "ETag");
  });
});

describe("CORS_ORIGINS=*", () => {
  let service: TestService;
  let port: number;
  before(async () => {
    service = await startTestService({ cors: { origins: "*", maxAgeSeconds: 60 } });
    port = await listening(service);
  });
  after(() => service.close());

  test("any origin may call, never with credentials", async () => {
    const reply = await send(port, "OPTIONS", "/verify", preflight(OTHER, "POST", "authorization"));
    assert.equal(reply.status, 204);
    assert.equal(reply.headers["access-control-allow-origin"], "*");
    assert.equal(reply.headers["access-control-allow-credentials"], undefined);
    assert.equal(reply.headers["access-control-max-age"], "60");
  });
});
