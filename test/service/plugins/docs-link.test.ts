/**
 * The `docs` a 401 names must lead somewhere: a section of a file shipped with every copy of
 * receiptd (the repository and the npm package), by an anchor that heading really has.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { corpusBytes } from "../../support/corpus.js";
import { startTestService, type TestService } from "../support/service.js";

const repository = new URL("../../../", import.meta.url);

/** GitHub's anchor for a markdown heading: lower case, punctuation dropped, spaces to hyphens. */
function headingAnchor(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");
}

function anchorsOf(markdown: string): Set<string> {
  const headings = markdown.split("\n").flatMap((line) => /^#{1,6} (.+)$/.exec(line)?.[1] ?? []);
  return new Set(headings.map(headingAnchor));
}

describe("the docs link of 401 answers", () => {
  let service: TestService;
  before(async () => {
    service = await startTestService({}, { anonymous: true });
  });
  after(() => service.close());

  test("headingAnchor spells anchors as GitHub does", () => {
    assert.equal(headingAnchor("Access and payments"), "access-and-payments");
    assert.equal(headingAnchor("The HTTP service"), "the-http-service");
    assert.equal(headingAnchor("Command-line tools"), "command-line-tools");
  });

  for (const [name, headers] of [
    ["missing_key", {}],
    ["invalid_key", { authorization: "Bearer svc_unknown" }],
  ] as const) {
    test(`${name}: a shipped file and one of its headings`, async () => {
      const response = await service.app.inject({
        method: "POST",
        url: "/verify",
        payload: corpusBytes("vectors/01_happy_minimal.json"),
        headers: { "content-type": "application/json", ...headers },
      });
      assert.equal(response.statusCode, 401);
      const body = response.json<{ error: string; docs: string }>();
      assert.equal(body.error, name);
      const [file, anchor] = body.docs.split("#");
      assert.equal(file, "README.md");
      const files = JSON.parse(readFileSync(new URL("package.json", repository), "utf8")).files;
      assert.ok(files.includes(file), "the file is in the npm package");
      const readme = readFileSync(fileURLToPath(new URL(file!, repository)), "utf8");
      assert.ok(anchorsOf(readme).has(anchor!), `README.md has no heading #${anchor}`);
    });
  }
});
