/**
 * MCP `verify_bundle` goes through the shared bundle verification (issue 27): its verdicts
 * reach `receiptd_verdicts_total` as `POST /verify`'s do, and `cache: true` is the digest
 * cache of `POST /verify?cache=1` — the same entries, the same payload, the same refusal when
 * the result budget runs out. Driven through `app.inject()`, with a clock the test moves, in
 * both modes: the cache in process memory (embedded) and in Redis (distributed).
 */
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";
import type { ConfigOverrides } from "../../../../src/service/config.js";
import { dumpCompact } from "../../../../src/verifier/json/dump.js";
import { parseJson } from "../../../../src/verifier/json/parse.js";
import {
  keysUnder,
  openTestRedis,
  randomPrefix,
  SHARED_REDIS_URL,
} from "../../../redis/support.js";
import { corpusBytes } from "../../../support/corpus.js";
import { parseExposition, sampleValue } from "../../../support/prometheus.js";
import { startTestService, type TestService } from "../../support/service.js";

const TRUSTED = corpusBytes("vectors/01_happy_minimal.json").toString("utf8");
const UNTRUSTED = corpusBytes("vectors/03_tampered_body.json").toString("utf8");

const MCP_HEADERS = {
  "content-type": "application/json",
  accept: "application/json, text/event-stream",
};

interface ToolPayload {
  verdict: string;
  verification_receipt?: Record<string, unknown>;
  cache?: { hit: boolean; cached_at: string; age_s?: number };
  service: string;
}

function toolCall(args: string, id = 1): string {
  return `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"verify_bundle","arguments":${args}}}`;
}

interface Mode {
  name: string;
  overrides: ConfigOverrides;
  /** Empties the digest cache between tests. */
  clear(service: TestService): Promise<void>;
}

const redisPrefix = randomPrefix();

const MODES: Mode[] = [
  {
    name: "embedded",
    overrides: {},
    clear: (service) => service.app.digestCache.close(),
  },
  {
    name: "distributed (Redis)",
    overrides: { redisUrl: SHARED_REDIS_URL, redisPrefix },
    clear: async () => {
      const connection = await openTestRedis(redisPrefix);
      const keys = await keysUnder(connection.client, redisPrefix);
      if (keys.length > 0) await connection.client.unlink(...keys);
      await connection.close();
    },
  },
];

for (const mode of MODES) {
  describe(`MCP verify_bundle: the verdict counter and the digest cache, ${mode.name}`, () => {
    const clock = { now: Date.UTC(2026, 10, 26, 12, 0, 0) };
    let service: TestService;
    before(async () => {
      service = await startTestService(mode.overrides, { clock: () => clock.now });
    });
    after(async () => {
      await mode.clear(service);
      await service.close();
    });
    beforeEach(() => mode.clear(service));

    const post = (body: string) =>
      service.app.inject({ method: "POST", url: "/mcp", headers: MCP_HEADERS, payload: body });
    const call = async (args: string) => {
      const response = await post(toolCall(args));
      assert.equal(response.statusCode, 200, response.body);
      const result = response.json().result as { structuredContent: ToolPayload; isError: boolean };
      assert.equal(result.isError, false);
      return result.structuredContent;
    };
    const counted = async (name: string, labels: Record<string, string>) =>
      sampleValue(parseExposition(await service.app.metrics.render()), name, labels);
    const verdicts = (verdict: string) => counted("receiptd_verdicts_total", { verdict });
    const cacheLookups = (result: string) =>
      counted("receiptd_digest_cache_requests_total", { result });

    test("each verdict is counted, in a single call and in a batch", async () => {
      const trusted = await verdicts("TRUSTED");
      const untrusted = await verdicts("UNTRUSTED");
      await call(`{"bundle":${TRUSTED}}`);
      assert.equal(await verdicts("TRUSTED"), trusted + 1);
      const batch = await post(
        `[${toolCall(`{"bundle":${TRUSTED}}`, 1)},${toolCall(`{"bundle":${UNTRUSTED}}`, 2)}]`,
      );
      assert.equal(batch.statusCode, 200, batch.body);
      assert.equal(await verdicts("TRUSTED"), trusted + 2);
      assert.equal(await verdicts("UNTRUSTED"), untrusted + 1);
    });

    test("cache: true misses, then hits with the original cached_at; a miss is counted", async () => {
      const trusted = await verdicts("TRUSTED");
      const hits = await cacheLookups("hit");
      const misses = await cacheLookups("miss");
      const miss = await call(`{"bundle":${TRUSTED},"cache":true}`);
      assert.equal(miss.cache?.hit, false);
      assert.deepEqual(Object.keys(miss).slice(-2), ["cache", "service"]);
      assert.equal(await verdicts("TRUSTED"), trusted + 1);
      assert.equal(await cacheLookups("miss"), misses + 1);

      clock.now += 5_400;
      const hit = await call(`{"bundle":${TRUSTED},"cache":true}`);
      assert.deepEqual(hit.cache, { hit: true, cached_at: miss.cache?.cached_at, age_s: 5 });
      assert.equal(await cacheLookups("hit"), hits + 1);
      // As for POST /verify?cache=1, a hit is no new verification.
      assert.equal(await verdicts("TRUSTED"), trusted + 1);

      const { cache: _missCache, ...missVerdict } = miss;
      const { cache: _hitCache, ...hitVerdict } = hit;
      assert.deepEqual(hitVerdict, missVerdict);
      assert.deepEqual(await call(`{"bundle":${TRUSTED}}`), missVerdict);
    });

    test("the entries are POST /verify?cache=1's: a receipt from the cache, a hit over HTTP", async () => {
      const first = await call(`{"bundle":${UNTRUSTED},"cache":true,"require_anchor":true}`);
      assert.equal(first.verification_receipt, undefined);
      const withReceipt = await call(
        `{"bundle":${UNTRUSTED},"cache":true,"require_anchor":true,"receipt":true}`,
      );
      assert.equal(withReceipt.cache?.hit, true);
      assert.equal(withReceipt.verification_receipt?.verified_at, first.cache?.cached_at);
      // require_anchor is part of the key, as it is for POST /verify.
      const anyAnchor = await call(`{"bundle":${UNTRUSTED},"cache":true}`);
      assert.equal(anyAnchor.cache?.hit, false);

      const body = `{"bundle":${dumpCompact(parseJson(Buffer.from(UNTRUSTED)))}}`;
      const http = await service.app.inject({
        method: "POST",
        url: "/verify?cache=1&receipt=1&require_anchor=1",
        payload: body,
      });
      assert.equal(http.statusCode, 200);
      const payload = http.json<ToolPayload>();
      assert.equal(payload.cache?.hit, true);
      assert.equal(
        JSON.stringify(payload.verification_receipt),
        JSON.stringify(withReceipt.verification_receipt),
      );
    });

    test("in a JSON-RPC batch, cache is ignored (as POST /verify ignores it for a batch)", async () => {
      const response = await post(`[${toolCall(`{"bundle":${TRUSTED},"cache":true}`)}]`);
      assert.equal(response.statusCode, 200, response.body);
      const [only] = response.json<{ result: { structuredContent: ToolPayload } }[]>();
      assert.equal(only?.result.structuredContent.cache, undefined);
      assert.equal(only?.result.structuredContent.verdict, "TRUSTED");
    });
  });
}

describe("MCP verify_bundle with cache: true past the result budget", () => {
  const clock = { now: Date.UTC(2026, 10, 26, 12, 0, 0) };
  const limit = 64;
  let service: TestService;
  before(async () => {
    service = await startTestService(
      { limits: { maxResultBytes: limit } },
      { clock: () => clock.now },
    );
  });
  after(() => service.close());

  test("the refusal of an uncached call, and not cached", async () => {
    const post = (args: string) =>
      service.app.inject({
        method: "POST",
        url: "/mcp",
        headers: MCP_HEADERS,
        payload: toolCall(args),
      });
    const cached = await post(`{"bundle":${UNTRUSTED},"cache":true}`);
    const uncached = await post(`{"bundle":${UNTRUSTED}}`);
    assert.equal(uncached.statusCode, 400, uncached.body);
    assert.equal(cached.statusCode, 400, cached.body);
    assert.equal(cached.body, uncached.body);
    assert.deepEqual(cached.json().error.data, {
      error: "result_too_large",
      detail: `the verdicts would hold more than ${limit} bytes of errors and reasons; send fewer or smaller bundles per request`,
      limit,
    });
    const again = await post(`{"bundle":${UNTRUSTED},"cache":true}`);
    assert.equal(again.statusCode, 400);
  });
});
