/**
 * Every bundle vector of the three manifests through `POST /verify`: alone, wrapped as
 * `{"bundle": …}`, and in batches of at most 50. The service must answer exactly the
 * verifier library's payload (plus `service` outside batches), byte for byte.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { verifyBundle } from "../../../../src/verifier/bundle/verify-bundle.js";
import { dumpCompact } from "../../../../src/verifier/json/dump.js";
import { parseJson } from "../../../../src/verifier/json/parse.js";
import {
  BUNDLE_MANIFESTS,
  type BundleManifest,
  corpusBytes,
  corpusManifest,
} from "../../../support/corpus.js";
import { startTestService, type TestService } from "../../support/service.js";

interface Vector {
  name: string;
  bytes: Buffer;
  requireAnchor: boolean;
  expectedVerdict: string;
}

const vectors: Vector[] = BUNDLE_MANIFESTS.flatMap((manifestPath) =>
  corpusManifest<BundleManifest>(manifestPath).vectors.map((vector) => ({
    name: `${manifestPath} ${vector.file}`,
    bytes: corpusBytes(`vectors/${vector.file}`),
    requireAnchor: vector.require_anchor,
    expectedVerdict: vector.expected_verdict,
  })),
);

/** The library's verdict payload for a vector, as compact JSON. */
function libraryPayload(vector: Vector, extra: Record<string, string> = {}): string {
  const result = verifyBundle(parseJson(vector.bytes), { requireAnchor: vector.requireAnchor });
  return dumpCompact({ ...result, ...extra });
}

function verifyUrl(requireAnchor: boolean): string {
  return requireAnchor ? "/verify?require_anchor=1" : "/verify";
}

const JSON_HEADERS = { "content-type": "application/json" };

describe("POST /verify over the bundle corpus", () => {
  let service: TestService;
  before(async () => {
    service = await startTestService({ cpuPool: { threads: 2 } });
  });
  after(() => service.close());

  test("the corpus has the 77 bundle vectors of the three manifests", () => {
    assert.equal(vectors.length, 77);
  });

  for (const vector of vectors) {
    test(`${vector.name}${vector.requireAnchor ? " (require_anchor)" : ""}`, async () => {
      const expected = libraryPayload(vector, { service: "continuity-receipt-verify" });
      const alone = await service.app.inject({
        method: "POST",
        url: verifyUrl(vector.requireAnchor),
        headers: JSON_HEADERS,
        payload: vector.bytes,
      });
      assert.equal(alone.statusCode, 200);
      assert.equal(alone.headers["content-type"], "application/json; charset=utf-8");
      assert.equal(alone.body, expected);
      assert.equal(JSON.parse(alone.body).verdict, vector.expectedVerdict);

      const wrapped = await service.app.inject({
        method: "POST",
        url: verifyUrl(vector.requireAnchor),
        headers: JSON_HEADERS,
        payload: Buffer.concat([Buffer.from('{"bundle": '), vector.bytes, Buffer.from("}")]),
      });
      assert.equal(wrapped.statusCode, 200);
      assert.equal(wrapped.body, expected);
    });
  }

  for (const requireAnchor of [false, true]) {
    test(`all vectors in batches of at most 50 (require_anchor=${requireAnchor})`, async () => {
      const group = vectors.filter((vector) => vector.requireAnchor === requireAnchor);
      for (let start = 0; start < group.length; start += 50) {
        const batch = group.slice(start, start + 50);
        const response = await service.app.inject({
          method: "POST",
          url: verifyUrl(requireAnchor),
          headers: JSON_HEADERS,
          payload: Buffer.concat([
            Buffer.from('{"bundles": ['),
            ...batch.flatMap((vector, index) =>
              index === 0 ? [vector.bytes] : [Buffer.from(","), vector.bytes],
            ),
            Buffer.from("]}"),
          ]),
        });
        assert.equal(response.statusCode, 200);
        const results = batch.map((vector) => libraryPayload(vector)).join(",");
        assert.equal(
          response.body,
          `{"results":[${results}],"count":${batch.length},"service":"continuity-receipt-verify"}`,
        );
      }
    });
  }
});
