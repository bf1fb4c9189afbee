/**
 * The page's Buffer (src/web/platform/buffer.ts, the `buffer` package completed) against
 * Node's, for what the verifier does with it. The browser test then runs the whole corpus
 * on it; this pins the edges the corpus may not reach.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { Buffer as PageBuffer } from "../../src/web/platform/buffer.js";

const same = (page: Uint8Array, node: Uint8Array, what: string) =>
  assert.deepEqual([...page], [...node], what);

test("base64url decoding, clean and with padding, the other alphabet or junk", () => {
  const samples = [
    "",
    "AA",
    "AAA",
    "_-8",
    "-_-_",
    "zLGZz9yUDT85txt_UjOjpqHFulTcm5Sq-0EzW1VHyqz55Io6IpLNNkqD5MovqUpN_7lD_4BkMydWNP_DXNwsCw",
    "ab+/",
    "ab==",
    "a b c d",
  ];
  for (const text of samples) {
    same(PageBuffer.from(text, "base64url"), Buffer.from(text, "base64url"), text);
  }
  assert.ok(PageBuffer.isEncoding("base64url"));
});

test("base64url encoding has no padding", () => {
  for (let length = 0; length < 70; length++) {
    const bytes = Uint8Array.from({ length }, (_, i) => (i * 37 + length) & 0xff);
    assert.equal(
      PageBuffer.from(bytes).toString("base64url"),
      Buffer.from(bytes).toString("base64url"),
    );
  }
});

test("hex, UTF-8 (lone surrogates too), ascii, latin1", () => {
  same(PageBuffer.from("00ff10ab", "hex"), Buffer.from("00ff10ab", "hex"), "hex");
  assert.equal(PageBuffer.from([0, 255, 16]).toString("hex"), "00ff10");
  for (const text of ["", "abc", "é∑😀", "a\ud800b", "\udc00", "\u2028"]) {
    same(PageBuffer.from(text, "utf8"), Buffer.from(text, "utf8"), JSON.stringify(text));
    same(PageBuffer.from(text), Buffer.from(text), JSON.stringify(text));
  }
  same(PageBuffer.from("3031", "ascii"), Buffer.from("3031", "ascii"), "ascii");
  assert.equal(
    PageBuffer.from([0xe9, 0x41]).toString("latin1"),
    Buffer.from([0xe9, 0x41]).toString("latin1"),
  );
});

test("views, concat, alloc and equals with any Uint8Array", () => {
  const backing = Uint8Array.from([1, 2, 3, 4, 5, 6]);
  same(PageBuffer.from(backing.buffer, 2, 3), Buffer.from(backing.buffer, 2, 3), "a view");
  const view = PageBuffer.from(backing.buffer, 1, 2);
  view[0] = 9;
  assert.equal(backing[1], 9, "a view shares its memory, as in Node");
  same(
    PageBuffer.concat([Uint8Array.from([1]), PageBuffer.from([2, 3])]),
    Uint8Array.from([1, 2, 3]),
    "concat",
  );
  same(PageBuffer.alloc(3), new Uint8Array(3), "alloc");
  assert.equal(PageBuffer.allocUnsafe(5).length, 5);
  assert.equal(PageBuffer.from([1, 2]).equals(Uint8Array.from([1, 2])), true);
  assert.equal(PageBuffer.from([1, 2]).equals(Uint8Array.from([1, 3])), false);
  assert.equal(PageBuffer.from([1, 2]).equals(Uint8Array.from([1])), false);
  assert.ok(PageBuffer.from([1]).subarray(0, 1) instanceof Uint8Array);
});
