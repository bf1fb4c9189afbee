/** Conditional GETs of stored documents (RFC 9110 §13.1.2, weak comparison). */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ifNoneMatchMatches, strongEtag } from "../../../src/service/http/stored-document.js";

describe("If-None-Match", () => {
  const etag = strongEtag(new TextEncoder().encode('{"a":1}'));

  test("a strong tag is the quoted SHA-256 of the bytes", () => {
    assert.match(etag, /^"[0-9a-f]{64}"$/);
    assert.notEqual(etag, strongEtag(new TextEncoder().encode('{"a":2}')));
  });

  const cases: [string | string[] | undefined, boolean][] = [
    [undefined, false],
    ["", false],
    [etag, true],
    [`W/${etag}`, true],
    ["*", true],
    [` "other" , W/"x",${etag}`, true],
    [`"other", ${etag} `, true],
    ['"other"', false],
    [etag.slice(1, -1), false],
    [['"other"', etag], true],
    ['"a,b", "c"', false],
  ];
  for (const [field, expected] of cases) {
    test(`${JSON.stringify(field)} → ${expected}`, () => {
      assert.equal(ifNoneMatchMatches(field, etag), expected);
    });
  }

  test("a comma inside a quoted tag does not split it", () => {
    assert.equal(ifNoneMatchMatches('"a,b"', '"a,b"'), true);
    assert.equal(ifNoneMatchMatches('"a,b"', '"a"'), false);
  });
});
