/** The nearest known path for a 404 (issue 37): a banded edit distance over the route list. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { boundedEditDistance, RouteList } from "../../../src/service/http/nearest-route.js";

/** The textbook Levenshtein distance, to check the banded one against. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(
        (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1),
        (previous[j] ?? 0) + 1,
        (current[j - 1] ?? 0) + 1,
      );
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}

describe("boundedEditDistance", () => {
  test("agrees with Levenshtein up to the limit, and says 'more' past it", () => {
    const words = [
      "",
      "/",
      "/verify",
      "/verifyy",
      "/verfy",
      "/vreify",
      "/verify-receipt",
      "/info",
      "/infO/",
      "abc",
      "cab",
    ];
    for (const a of words) {
      for (const b of words) {
        for (const limit of [1, 2, 3]) {
          const exact = editDistance(a, b);
          assert.equal(
            boundedEditDistance(a, b, limit),
            Math.min(exact, limit + 1),
            `${a} ${b} ${limit}`,
          );
        }
      }
    }
  });
});

describe("RouteList.nearest", () => {
  const routes = new RouteList();
  for (const template of [
    "/verify",
    "/verify-receipt",
    "/info",
    "/revocations/:issuer",
    "/assets/*",
    "/",
  ]) {
    routes.add(template);
  }

  test("a typo, a case slip, a trailing slash", () => {
    assert.equal(routes.nearest("/verifyy"), "/verify");
    assert.equal(routes.nearest("/VERIFY"), "/verify");
    assert.equal(routes.nearest("/info/"), "/info");
    assert.equal(routes.nearest("/verify-reciept"), "/verify-receipt");
  });

  test("parameters take the asked segment", () => {
    assert.equal(routes.nearest("/revocation/did:key:z6Mk"), "/revocations/:issuer");
  });

  test("nothing close, a short path, a very long one, a wildcard: no suggestion", () => {
    assert.equal(routes.nearest("/completely-else"), null);
    assert.equal(routes.nearest("/x"), null);
    assert.equal(routes.nearest(`/verifyy${"y".repeat(600)}`), null);
    assert.equal(routes.nearest("/asset/app.js"), null);
  });
});
