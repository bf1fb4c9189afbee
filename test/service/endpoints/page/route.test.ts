/**
 * `GET /` and its assets (src/service/endpoints/page/route.ts): the built page from dist/web,
 * cache headers, the Content-Security-Policy, pre-compressed copies, and no key, cap or
 * charge for any of it.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { brotliDecompressSync, gunzipSync } from "node:zlib";
import { ConfigError, loadConfig } from "../../../../src/service/config.js";
import {
  ASSET_CACHE_CONTROL,
  INDEX_CACHE_CONTROL,
  locateWebRoot,
  PAGE_CSP,
} from "../../../../src/service/endpoints/page/route.js";
import { startTestService, type TestService } from "../../support/service.js";

const root = locateWebRoot();
const ANONYMOUS_CAP = 2;

let service: TestService;

before(async () => {
  assert.ok(root !== null, "dist/web is missing: run npm run build");
  service = await startTestService(
    { limits: { anonymousDailyCap: ANONYMOUS_CAP } },
    { anonymous: true },
  );
});
after(() => service.close());

function assets(html: string): { src: string; integrity: string }[] {
  return [...html.matchAll(/(?:src|href)="(\/assets\/[^"]+)" integrity="([^"]+)"/g)].map(
    (match) => ({
      src: match[1]!,
      integrity: match[2]!,
    }),
  );
}

describe("the verification page", () => {
  test("GET / is the built page, revalidated on every load, under a strict CSP", async () => {
    const response = await service.app.inject({ method: "GET", url: "/" });
    assert.equal(response.statusCode, 200);
    assert.equal(response.headers["content-type"], "text/html; charset=utf-8");
    assert.equal(response.headers["cache-control"], INDEX_CACHE_CONTROL);
    assert.ok(response.headers.etag, "an ETag to revalidate with");
    assert.equal(response.body, readFileSync(join(root!, "index.html"), "utf8"));
    const csp = String(response.headers["content-security-policy"]);
    assert.equal(csp, PAGE_CSP);
    for (const directive of [
      "default-src 'none'",
      "script-src 'self'",
      "style-src 'self'",
      "connect-src 'self'",
      // The page's own worker script, or its checked bytes as a Blob URL (offline: issue 37).
      "worker-src 'self' blob:;",
      "form-action 'none'",
      "frame-ancestors 'none'",
      "base-uri 'none'",
    ]) {
      assert.ok(csp.includes(directive), directive);
    }
    assert.doesNotMatch(csp, /unsafe|https?:|\*/);
    assert.equal(response.headers["x-content-type-options"], "nosniff");
    assert.equal(response.headers["referrer-policy"], "no-referrer");
    // No inline script or style for the policy to forbid, and nothing from another origin.
    assert.doesNotMatch(response.body, /<script(?![^>]*\bsrc=)|<style|\sstyle=|\son[a-z]+=/i);
    assert.doesNotMatch(response.body, /(?:src|href)="(?:https?:)?\/\//);
  });

  test("each asset is named by its content, matches its SRI hash and is kept a year", async () => {
    const html = (await service.app.inject({ method: "GET", url: "/" })).body;
    const named = assets(html);
    assert.equal(named.length, 2, "one script and one stylesheet");
    for (const { src, integrity } of named) {
      const response = await service.app.inject({ method: "GET", url: src });
      assert.equal(response.statusCode, 200, src);
      assert.equal(response.headers["cache-control"], ASSET_CACHE_CONTROL);
      assert.match(
        String(response.headers["content-type"]),
        src.endsWith(".js") ? /javascript/ : /text\/css/,
      );
      const digest = createHash("sha384").update(response.rawPayload).digest("base64");
      assert.equal(integrity, `sha384-${digest}`);
      assert.match(src, /^\/assets\/(app|style)-[A-Z0-9]{8}\.(js|css)$/);
    }
  });

  test("browsers that take brotli or gzip get the copies made at build time", async () => {
    const script = assets((await service.app.inject({ method: "GET", url: "/" })).body)[0]!.src;
    const plain = (await service.app.inject({ method: "GET", url: script })).rawPayload;
    const brotli = await service.app.inject({
      method: "GET",
      url: script,
      headers: { "accept-encoding": "br, gzip" },
    });
    assert.equal(brotli.headers["content-encoding"], "br");
    assert.equal(brotli.headers.vary, "accept-encoding");
    assert.ok(brotli.rawPayload.length < plain.length / 2);
    assert.deepEqual(brotliDecompressSync(brotli.rawPayload), plain);
    const gzip = await service.app.inject({
      method: "GET",
      url: script,
      headers: { "accept-encoding": "gzip" },
    });
    assert.equal(gzip.headers["content-encoding"], "gzip");
    assert.deepEqual(gunzipSync(gzip.rawPayload), plain);
  });

  test("HEAD answers the headers alone, and a conditional GET is 304", async () => {
    const head = await service.app.inject({ method: "HEAD", url: "/" });
    assert.equal(head.statusCode, 200);
    assert.equal(head.body, "");
    const etag = String((await service.app.inject({ method: "GET", url: "/" })).headers.etag);
    const again = await service.app.inject({
      method: "GET",
      url: "/",
      headers: { "if-none-match": etag },
    });
    assert.equal(again.statusCode, 304);
  });

  test("only the built assets are served: anything else under /assets is the usual 404", async () => {
    for (const url of [
      "/assets/nope.js",
      "/assets/..%2Fbuild.json",
      "/assets/",
      "/build.json",
      "/index.html",
    ]) {
      const response = await service.app.inject({ method: "GET", url });
      assert.equal(response.statusCode, 404, url);
      // A file the asset route does not have, or a path no route has (linking /openapi.json).
      assert.equal(response.json().error, "not_found", url);
    }
  });

  test("the page needs no key and counts against no cap, whatever credential comes with it", async () => {
    for (let i = 0; i < ANONYMOUS_CAP * 3; i++) {
      const page = await service.app.inject({ method: "GET", url: "/" });
      assert.equal(page.statusCode, 200);
      assert.equal(page.headers["x-ratelimit-remaining"], undefined);
    }
    const withUnknownKey = await service.app.inject({
      method: "GET",
      url: "/",
      headers: { authorization: `Bearer svc_${"0".repeat(48)}` },
    });
    assert.equal(withUnknownKey.statusCode, 200);
    // The anonymous bucket is untouched: keyless reads still have the whole cap.
    const read = await service.app.inject({ method: "GET", url: "/notarize" });
    assert.equal(read.statusCode, 200);
    assert.equal(read.headers["x-ratelimit-remaining"], String(ANONYMOUS_CAP - 1));
  });

  test("the page is not an operation of /openapi.json", async () => {
    const document = (await service.app.inject({ method: "GET", url: "/openapi.json" })).json() as {
      paths: Record<string, unknown>;
    };
    assert.equal(document.paths["/"], undefined);
    assert.equal(document.paths["/assets/{file}"], undefined);
  });

  test("VERIFICATION_PAGE=off: the page and its assets are the usual 404, the API is unchanged", async () => {
    assert.equal(loadConfig({}).verificationPage, true);
    assert.equal(loadConfig({ VERIFICATION_PAGE: "on" }).verificationPage, true);
    assert.equal(loadConfig({ VERIFICATION_PAGE: " OFF " }).verificationPage, false);
    assert.throws(() => loadConfig({ VERIFICATION_PAGE: "no" }), ConfigError);

    const html = (await service.app.inject({ method: "GET", url: "/" })).body;
    const off = await startTestService({ verificationPage: false }, { anonymous: true });
    try {
      for (const url of ["/", ...assets(html).map((asset) => asset.src)]) {
        const response = await off.app.inject({ method: "GET", url });
        assert.equal(response.statusCode, 404, url);
        assert.equal(response.json().error, "not_found", url);
        assert.equal(response.headers["content-security-policy"], undefined, url);
      }
      assert.equal((await off.app.inject({ method: "GET", url: "/info" })).statusCode, 200);
    } finally {
      await off.close();
    }
  });
});
