/**
 * Where the network matters, over a real socket: the body size limit is enforced while the
 * body streams in (413 at 1 MiB + 1 byte, before the rest is read), and 1 MiB is accepted.
 */
import assert from "node:assert/strict";
import { request } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { corpusBytes } from "../support/corpus.js";
import { startTestService, type TestService } from "./support/service.js";

const MIB = 1_048_576;
const BUNDLE = corpusBytes("vectors/02_happy_full.json");
const TOO_LARGE = { error: "body_too_large", limit: MIB };

interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/**
 * POSTs with node:http so the test controls framing: `declaredLength` sets Content-Length
 * (possibly more than is sent), without it the body is chunked. The server may close the
 * connection while the body is still being written; what counts is the response it sent.
 */
function rawPost(
  url: URL,
  body: Buffer,
  key: Record<string, string>,
  declaredLength?: number,
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = { "content-type": "application/json", ...key };
    if (declaredLength !== undefined) headers["content-length"] = declaredLength;
    const outgoing = request(url, { method: "POST", headers }, (response) => {
      const chunks: Buffer[] = [];
      response.on("data", (chunk: Buffer) => chunks.push(chunk));
      response.on("end", () =>
        resolve({
          status: response.statusCode ?? 0,
          headers: response.headers,
          body: Buffer.concat(chunks).toString("utf8"),
        }),
      );
      response.on("error", reject);
    });
    outgoing.on("error", (error: NodeJS.ErrnoException) => {
      if (error.code !== "EPIPE" && error.code !== "ECONNRESET") reject(error);
    });
    if (declaredLength === undefined) {
      for (let offset = 0; offset < body.length; offset += 64 * 1024) {
        outgoing.write(body.subarray(offset, offset + 64 * 1024));
      }
      outgoing.end();
    } else {
      outgoing.end(body);
    }
  });
}

/** The bundle followed by spaces (insignificant whitespace) up to exactly `size` bytes. */
function paddedBundle(size: number): Buffer {
  return Buffer.concat([BUNDLE, Buffer.alloc(size - BUNDLE.length, " ")]);
}

describe("HTTP over a socket", () => {
  let service: TestService;
  let verifyUrl: URL;
  before(async () => {
    service = await startTestService();
    await service.app.listen({ port: 0, host: "127.0.0.1" });
    const { port } = service.app.server.address() as AddressInfo;
    verifyUrl = new URL(`http://127.0.0.1:${port}/verify`);
  });
  after(() => service.close());

  test("a corpus bundle through fetch", async () => {
    const response = await fetch(verifyUrl, {
      method: "POST",
      body: BUNDLE,
      headers: service.authHeaders,
    });
    assert.equal(response.status, 200);
    assert.equal(response.headers.get("content-type"), "application/json; charset=utf-8");
    assert.ok(response.headers.get("x-request-id"));
    const payload = (await response.json()) as { verdict: string; service: string };
    assert.equal(payload.verdict, "TRUSTED");
    assert.equal(payload.service, "continuity-receipt-verify");
  });

  test("exactly 1 MiB is accepted", async () => {
    const response = await fetch(verifyUrl, {
      method: "POST",
      body: paddedBundle(MIB),
      headers: service.authHeaders,
    });
    assert.equal(response.status, 200);
    assert.equal(((await response.json()) as { verdict: string }).verdict, "TRUSTED");
  });

  test("1 MiB + 1 byte with Content-Length → 413", async () => {
    const response = await rawPost(verifyUrl, paddedBundle(MIB + 1), service.authHeaders, MIB + 1);
    assert.equal(response.status, 413);
    assert.equal(response.headers["content-type"], "application/json; charset=utf-8");
    assert.ok(response.headers["x-request-id"]);
    assert.deepEqual(JSON.parse(response.body), TOO_LARGE);
  });

  test("1 MiB + 1 byte chunked → 413", async () => {
    const response = await rawPost(verifyUrl, paddedBundle(MIB + 1), service.authHeaders);
    assert.equal(response.status, 413);
    assert.deepEqual(JSON.parse(response.body), TOO_LARGE);
  });

  test("an oversized Content-Length is refused before any of the body is read", async () => {
    // Only 2 bytes of the declared 64 MiB are ever sent: the answer cannot have waited for them.
    const response = await rawPost(verifyUrl, Buffer.from("{}"), service.authHeaders, 64 * MIB);
    assert.equal(response.status, 413);
    assert.deepEqual(JSON.parse(response.body), TOO_LARGE);
  });
});
