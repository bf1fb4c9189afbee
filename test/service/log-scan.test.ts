/**
 * Logs never contain request content (service.md §9): the whole bundle corpus and the hostile
 * set go through the service with an API key and a query string, at the most verbose log
 * level, and no bundle field value, key or query string may appear in any log line or in the
 * audit file.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { parseJson } from "../../src/verifier/json/parse.js";
import type { JsonValue } from "../../src/verifier/json/value.js";
import {
  BUNDLE_MANIFESTS,
  type BundleManifest,
  corpusBytes,
  corpusManifest,
  type HostileIndex,
} from "../support/corpus.js";
import { startTestService, type TestService } from "./support/service.js";

/**
 * Strings long enough to be content rather than a word any log line may hold by chance
 * ("TRUSTED", "POST"): ids, hashes, did:keys, signatures, free text.
 */
const MIN_SECRET_LENGTH = 12;

function collectStrings(value: JsonValue, into: Set<string>): void {
  if (typeof value === "string") {
    if (value.length >= MIN_SECRET_LENGTH) into.add(value);
  } else if (Array.isArray(value)) {
    for (const item of value) collectStrings(item, into);
  } else if (value instanceof Map) {
    for (const [key, item] of value) {
      if (key.length >= MIN_SECRET_LENGTH) into.add(key);
      collectStrings(item, into);
    }
  }
}

function bundleFiles(): string[] {
  const files = new Set<string>();
  for (const manifest of BUNDLE_MANIFESTS) {
    for (const vector of corpusManifest<BundleManifest>(manifest).vectors) {
      files.add(`vectors/${vector.file}`);
    }
  }
  return [...files];
}

describe("content-free logs", () => {
  const lines: string[] = [];
  let service: TestService;
  let key: string;
  const marker = `marker${randomBytes(8).toString("hex")}`;
  const contents = new Set<string>();

  before(async () => {
    service = await startTestService({
      logLevel: "trace",
      logDestination: { write: (line) => lines.push(line) },
    });
    key = (await service.app.accessServices.keys.create({ name: "log-scan" })).key;
    const headers = { authorization: `Bearer ${key}`, "user-agent": `scanner/${marker}` };
    const inputs = [
      ...bundleFiles().map((file) => corpusBytes(file)),
      ...corpusManifest<HostileIndex>("hostile/index.json").cases.map((entry) =>
        corpusBytes(`hostile/${entry.file}`),
      ),
    ];
    for (const bytes of inputs) {
      try {
        collectStrings(parseJson(bytes), contents);
      } catch {
        // Not JSON (a hostile case): the raw text must not be logged either.
        const text = bytes.toString("utf8");
        if (text.length >= MIN_SECRET_LENGTH) contents.add(text.slice(0, 64));
      }
      const url = `/verify?receipt=1&cache=1&${marker}=${marker}`;
      const answer = await service.app.inject({ method: "POST", url, headers, payload: bytes });
      assert.ok([200, 400, 413].includes(answer.statusCode), String(answer.statusCode));
    }
    // Failing and keyless requests are logged too.
    await service.app.inject({ method: "GET", url: `/anchors/${marker}?q=${marker}` });
    await service.app.inject({ method: "GET", url: `/nowhere/${marker}` });
    await service.app.inject({
      method: "POST",
      url: "/verify",
      headers: { "x-svc-key": `svc_${"0".repeat(48)}` },
      payload: "{}",
    });
    await service.app.accessServices.audit.flush();
  });
  after(() => service.close());

  test("every request was logged", () => {
    assert.ok(lines.length > 285, String(lines.length));
    assert.ok(contents.size > 100, String(contents.size));
  });

  test("no bundle field value, key, query string or user agent appears in a log line", () => {
    const logged = lines.join("\n");
    assert.ok(!logged.includes(marker), "a query string, path or user agent was logged");
    assert.ok(!logged.includes(key.slice(4)), "an API key was logged");
    assert.ok(!logged.includes("0".repeat(48)), "a presented key was logged");
    const leaked = [...contents].filter((content) => logged.includes(content));
    assert.deepEqual(leaked, []);
  });

  test("the audit file holds route templates and principals only", async () => {
    const files = await readdir(service.config.auditDir);
    const audit = (
      await Promise.all(files.map((name) => readFile(join(service.config.auditDir, name), "utf8")))
    ).join("");
    assert.ok(audit.length > 0);
    assert.ok(!audit.includes(marker));
    assert.ok(!audit.includes(key.slice(4)));
    assert.deepEqual(
      [...contents].filter((content) => audit.includes(content)),
      [],
    );
  });
});
