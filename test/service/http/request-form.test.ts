/**
 * What a client that sends a request in a slightly wrong form is told, over a real socket
 * (issue 37): a compressed or multipart body is refused 415 before it is read, a key in the
 * wrong place is `missing_key` with a detail saying what was found, and a mistyped path is a
 * 404 that names the nearest known path and links /openapi.json.
 */
import assert from "node:assert/strict";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { gzipSync } from "node:zlib";
import { corpusBytes } from "../../support/corpus.js";
import { jsonOf, RawClient } from "../support/raw-client.js";
import { startTestService, type TestService } from "../support/service.js";

const BUNDLE = corpusBytes("vectors/01_happy_minimal.json");
const JSON_TYPE = { "content-type": "application/json" };
const MISSING_KEY_HINT = "send an API key as 'Authorization: Bearer svc_…' or 'X-SVC-Key: svc_…'";

describe("request form over a socket", () => {
  let service: TestService;
  let base: string;
  let port: number;
  before(async () => {
    service = await startTestService();
    base = await service.app.listen({ port: 0, host: "127.0.0.1" });
    port = (service.app.server.address() as AddressInfo).port;
  });
  after(() => service.close());

  const postVerify = (
    body: RequestInit["body"],
    headers: Record<string, string>,
    path = "/verify",
  ) => fetch(`${base}${path}`, { method: "POST", body, headers });

  describe("Content-Encoding", () => {
    test("a gzip body is 415 unsupported_content_encoding naming identity", async () => {
      const response = await postVerify(gzipSync(BUNDLE), {
        ...JSON_TYPE,
        ...service.authHeaders,
        "content-encoding": "gzip",
      });
      assert.equal(response.status, 415);
      assert.equal(response.headers.get("content-type"), "application/json; charset=utf-8");
      assert.equal(response.headers.get("accept-encoding"), "identity");
      assert.deepEqual(await response.json(), {
        error: "unsupported_content_encoding",
        detail:
          "Content-Encoding gzip is not accepted: send the body uncompressed (no Content-Encoding, or identity)",
        supported: ["identity"],
      });
    });

    test("every coding but identity is named; identity alone is read as usual", async () => {
      const refused = await postVerify(BUNDLE, {
        ...service.authHeaders,
        "content-encoding": "identity, BR",
      });
      assert.equal(refused.status, 415);
      const body = (await refused.json()) as { detail: string };
      assert.match(body.detail, /^Content-Encoding br is not accepted/);

      const plain = await postVerify(BUNDLE, {
        ...service.authHeaders,
        "content-encoding": "identity",
      });
      assert.equal(plain.status, 200);
      assert.equal(((await plain.json()) as { verdict: string }).verdict, "TRUSTED");
    });

    test("the refusal comes before the body is read: a body never finished is answered", async () => {
      const client = await RawClient.open(port);
      try {
        // 64 KiB announced, 2 bytes sent: an answer that waited for the body would never come.
        client.send(
          "POST /verify HTTP/1.1\r\nHost: receiptd.test\r\nContent-Type: application/json\r\n" +
            `X-SVC-Key: ${service.key}\r\nContent-Encoding: gzip\r\nContent-Length: 65536\r\n\r\n{}`,
        );
        const [response] = await client.responsesArrived(1);
        assert.equal(response?.status, 415);
        assert.equal(response?.headers.connection, "close");
        assert.equal((jsonOf(response) as { error: string }).error, "unsupported_content_encoding");
        assert.equal(await client.closedWithin(), true);
      } finally {
        client.destroy();
      }
    });

    test("credentials are checked first; a request without a body is not refused", async () => {
      const anonymous = await postVerify(gzipSync(BUNDLE), { "content-encoding": "gzip" });
      assert.equal(anonymous.status, 401);
      assert.equal(((await anonymous.json()) as { error: string }).error, "missing_key");
      const read = await fetch(`${base}/info`, { headers: { "content-encoding": "gzip" } });
      assert.equal(read.status, 200);
    });
  });

  describe("multipart bodies", () => {
    test("curl -F (multipart/form-data) is 415 unsupported_media_type naming application/json", async () => {
      const form = new FormData();
      form.append("file", new Blob([BUNDLE], { type: "application/json" }), "bundle.json");
      const response = await postVerify(form, service.authHeaders);
      assert.equal(response.status, 415);
      assert.deepEqual(await response.json(), {
        error: "unsupported_media_type",
        detail:
          "multipart/form-data is not accepted: the body is the JSON document itself, sent as application/json (with curl: --data-binary @file.json -H 'Content-Type: application/json', not -F)",
        supported: ["application/json"],
      });
    });

    test("other labels stay accepted: the bytes are the document (curl -d, text/plain, none)", async () => {
      for (const contentType of ["application/x-www-form-urlencoded", "text/plain", undefined]) {
        const headers: Record<string, string> = { ...service.authHeaders };
        if (contentType !== undefined) headers["content-type"] = contentType;
        // fetch labels a Uint8Array body with no type of its own.
        const response = await postVerify(new Uint8Array(BUNDLE), headers);
        assert.equal(response.status, 200, String(contentType));
        assert.equal(((await response.json()) as { verdict: string }).verdict, "TRUSTED");
      }
    });

    test("POST /mcp refuses a multipart body the same way", async () => {
      const form = new FormData();
      form.append("rpc", '{"jsonrpc":"2.0","id":1,"method":"ping"}');
      const response = await postVerify(form, { accept: "application/json" }, "/mcp");
      assert.equal(response.status, 415);
      const body = (await response.json()) as { error: string; supported: string[] };
      assert.equal(body.error, "unsupported_media_type");
      assert.deepEqual(body.supported, ["application/json"]);
    });
  });

  describe("missing_key says what it found", () => {
    const key = () => service.key ?? "";

    test("with no credential at all, the answer is the contract's {error, hint, docs}", async () => {
      const response = await postVerify(BUNDLE, JSON_TYPE);
      assert.equal(response.status, 401);
      assert.equal(response.headers.get("www-authenticate"), 'Bearer realm="receiptd"');
      assert.deepEqual(await response.json(), {
        error: "missing_key",
        hint: MISSING_KEY_HINT,
        docs: "README.md#access-and-payments",
      });
    });

    test("a key in Authorization without Bearer", async () => {
      const response = await postVerify(BUNDLE, { ...JSON_TYPE, authorization: key() });
      assert.equal(response.status, 401);
      const text = await response.text();
      assert.ok(!text.includes(key()), "the key is never said back");
      assert.deepEqual(JSON.parse(text), {
        error: "missing_key",
        detail:
          "the Authorization header holds a key without the 'Bearer' scheme; send it as 'Authorization: Bearer svc_…' or 'X-SVC-Key: svc_…'",
        hint: MISSING_KEY_HINT,
        docs: "README.md#access-and-payments",
      });
    });

    test("another Authorization scheme is named", async () => {
      const response = await postVerify(BUNDLE, { authorization: "Basic dXNlcjpwYXNz" });
      assert.equal(response.status, 401);
      const body = (await response.json()) as { detail: string };
      assert.equal(
        body.detail,
        "the Authorization header's scheme is 'Basic', which this service does not read; send it as 'Authorization: Bearer svc_…' or 'X-SVC-Key: svc_…'",
      );
    });

    test("a key in the query string (?key=, ?api_key=) is named, never read", async () => {
      for (const name of ["key", "api_key"]) {
        const response = await postVerify(BUNDLE, JSON_TYPE, `/verify?${name}=${key()}`);
        assert.equal(response.status, 401, name);
        const text = await response.text();
        assert.ok(!text.includes(key()), "the key is never said back");
        const body = JSON.parse(text) as { error: string; detail: string };
        assert.equal(body.error, "missing_key");
        assert.equal(
          body.detail,
          `the query string has '${name}', but keys are read only from headers, never from URLs (which end up in logs and browser histories); send it as 'Authorization: Bearer svc_…' or 'X-SVC-Key: svc_…'`,
        );
      }
    });

    test("a key sent properly alongside one in the query string is served", async () => {
      const response = await postVerify(
        BUNDLE,
        { ...JSON_TYPE, ...service.authHeaders },
        `/verify?key=${key()}`,
      );
      assert.equal(response.status, 200);
    });
  });

  describe("a mistyped path", () => {
    test("/verifyy is a 404 naming POST /verify and linking /openapi.json", async () => {
      const response = await postVerify(
        BUNDLE,
        { ...JSON_TYPE, ...service.authHeaders },
        "/verifyy",
      );
      assert.equal(response.status, 404);
      assert.equal(response.headers.get("content-type"), "application/json; charset=utf-8");
      assert.deepEqual(await response.json(), {
        error: "not_found",
        detail:
          "no route has this path; did you mean POST /verify? Every path and method is listed in /openapi.json",
        did_you_mean: "/verify",
        docs: "/openapi.json",
      });
    });

    test("a path parameter keeps its place: /revocation/<did> → /revocations/{issuer}", async () => {
      const response = await fetch(
        `${base}/revocation/did:key:z6MkfvFqL6qMAgXLopHUAKn1E4Mwf2HLwSrP6eTcu5vnfZZK`,
      );
      assert.equal(response.status, 404);
      const body = (await response.json()) as { did_you_mean: string };
      assert.equal(body.did_you_mean, "/revocations/{issuer}");
      const document = (await (await fetch(`${base}/openapi.json`)).json()) as {
        paths: Record<string, unknown>;
      };
      assert.ok(Object.hasOwn(document.paths, body.did_you_mean));
    });

    test("nothing near: no suggestion, still the link", async () => {
      const response = await fetch(`${base}/nothing-like-any-route`);
      assert.equal(response.status, 404);
      assert.deepEqual(await response.json(), {
        error: "not_found",
        detail: "no route has this path; every path and method is listed in /openapi.json",
        docs: "/openapi.json",
      });
    });

    test("a known path asked with another method is still 405 with Allow", async () => {
      const response = await fetch(`${base}/verify`);
      assert.equal(response.status, 405);
      assert.equal(response.headers.get("allow"), "POST");
    });
  });
});
