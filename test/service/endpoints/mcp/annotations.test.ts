/**
 * MCP tool annotations (issue 28): each tool's hints follow from one row, its behaviour in
 * `TOOL_BEHAVIOURS`, through `BEHAVIOUR_HINTS`. Checked here against what the tools do: every
 * tool is called twice on a service whose stores and DATA_DIR are watched, and a tool that
 * wrote anything must not claim `reads` (nor a `writes` tool write nothing). A new tool needs
 * a call in `EXAMPLE_CALLS` (typed by `ToolName`), so it cannot skip the check.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import { join, relative, sep } from "node:path";
import { after, before, describe, test } from "node:test";
import { isDeepStrictEqual } from "node:util";
import {
  BEHAVIOUR_HINTS,
  TOOL_BEHAVIOURS,
  TOOLS,
  type ToolBehaviour,
  type ToolName,
} from "../../../../src/service/endpoints/mcp/tools.js";
import type { DocumentStore } from "../../../../src/storage/document-store.js";
import { generateSigner } from "../../../../src/verifier/crypto/ed25519.js";
import { dumpCompact } from "../../../../src/verifier/json/dump.js";
import {
  buildRevocationDocument,
  signRevocationStatement,
} from "../../../../src/verifier/revocations/document.js";
import { corpusBytes } from "../../../support/corpus.js";
import { startTestService, type TestService } from "../../support/service.js";

const MCP_HEADERS = {
  "content-type": "application/json",
  accept: "application/json, text/event-stream",
};

const ISSUER = generateSigner();
const REVOCATIONS = dumpCompact(
  buildRevocationDocument([signRevocationStatement(ISSUER, { revokedAt: "2026-03-01T00:00:00Z" })]),
);
const HELLO_HEADER = (
  JSON.parse(corpusBytes("vectors/anchor/headers.json").toString("utf8")) as {
    headers: Record<string, string>;
  }
).headers["358391"] as string;

/** Arguments under which each tool does its full work (a receipt signed, a proof confirmed). */
const EXAMPLE_CALLS: Record<ToolName, string> = {
  verify_bundle: `{"bundle":${corpusBytes("vectors/01_happy_minimal.json").toString("utf8")},"receipt":true}`,
  verify_anchor: JSON.stringify({
    proof: corpusBytes("vectors/anchor/hello-world.txt.ots").toString("base64"),
    digest: "03ba204e50d126e4674c005e04d82e84c21366780af1f43bd54a37816b6ab340",
    headers: { 358391: HELLO_HEADER },
  }),
  get_revocations: JSON.stringify({ issuer: ISSUER.did }),
  notarize: JSON.stringify({
    context_digest: `sha256:${"0f".repeat(32)}`,
    action: "annotations test",
    metadata: { round: 1 },
  }),
};

const WRITES = ["create", "replace", "delete"] as const;

/** Counts the store's writes from now on, whatever collection they go to. */
function countWrites(store: DocumentStore): { count: number } {
  const counter = { count: 0 };
  for (const name of WRITES) {
    const write = store[name].bind(store) as (...args: unknown[]) => Promise<unknown>;
    (store as unknown as Record<string, unknown>)[name] = (...args: unknown[]) => {
      counter.count += 1;
      return write(...args);
    };
  }
  return counter;
}

/**
 * Every file under `dir` with a digest of its bytes, so a tool writing through any store on
 * disk shows. `state/` is left out: it holds the access accounting (daily caps) that every
 * keyed request updates, whatever it asks for.
 */
async function snapshot(dir: string): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    const path = join(entry.parentPath, entry.name);
    if (!entry.isFile() || relative(dir, path).startsWith(`state${sep}`)) continue;
    files.set(
      path,
      createHash("sha256")
        .update(await readFile(path))
        .digest("hex"),
    );
  }
  return files;
}

describe("tool annotations come from each tool's behaviour", () => {
  test("every listed tool has a behaviour, and its annotations are that behaviour's hints", () => {
    assert.deepEqual(
      TOOLS.map((tool) => tool.name),
      Object.keys(TOOL_BEHAVIOURS),
    );
    for (const tool of TOOLS) {
      assert.deepEqual(tool.annotations, {
        title: tool.title,
        ...BEHAVIOUR_HINTS[TOOL_BEHAVIOURS[tool.name]],
      });
    }
  });

  test("the hints say what each behaviour means (MCP 2025-06-18 ToolAnnotations)", () => {
    const meaning: Record<ToolBehaviour, (typeof BEHAVIOUR_HINTS)[ToolBehaviour]> = {
      // Changes nothing, so nothing is destroyed and a repeat has no further effect.
      reads: {
        readOnlyHint: true,
        destructiveHint: false,
        idempotentHint: true,
        openWorldHint: false,
      },
      // Only adds records, so it destroys nothing; each call adds one more, so a repeat counts.
      writes: {
        readOnlyHint: false,
        destructiveHint: false,
        idempotentHint: false,
        openWorldHint: false,
      },
    };
    assert.deepEqual(BEHAVIOUR_HINTS, meaning);
  });

  test("the verifies and get_revocations only read", () => {
    for (const name of ["verify_bundle", "verify_anchor", "get_revocations"] as const) {
      assert.equal(TOOL_BEHAVIOURS[name], "reads");
      const annotations = TOOLS.find((tool) => tool.name === name)?.annotations;
      assert.equal(annotations?.readOnlyHint, true, name);
      assert.equal(annotations?.idempotentHint, true, name);
    }
  });

  test("notarize writes: not read-only, not idempotent, not destructive, closed world", () => {
    assert.equal(TOOL_BEHAVIOURS.notarize, "writes");
    assert.deepEqual(TOOLS.find((tool) => tool.name === "notarize")?.annotations, {
      title: "Notarize context digests",
      readOnlyHint: false,
      destructiveHint: false,
      idempotentHint: false,
      openWorldHint: false,
    });
  });
});

describe("each tool's behaviour is what it does to the service's state", () => {
  let service: TestService;
  let writes: { count: number };
  before(async () => {
    service = await startTestService();
    await service.app.documentStore.create("revocations", ISSUER.did, Buffer.from(REVOCATIONS));
    writes = countWrites(service.app.documentStore);
  });
  after(() => service.close());

  for (const tool of TOOLS) {
    const behaviour = TOOL_BEHAVIOURS[tool.name];
    test(`${tool.name} (${behaviour}), called twice`, async () => {
      for (const round of [1, 2]) {
        const before = { writes: writes.count, files: await snapshot(service.config.dataDir) };
        const response = await service.app.inject({
          method: "POST",
          url: "/mcp",
          headers: MCP_HEADERS,
          payload: `{"jsonrpc":"2.0","id":${round},"method":"tools/call","params":{"name":"${tool.name}","arguments":${EXAMPLE_CALLS[tool.name]}}}`,
        });
        assert.equal(response.statusCode, 200, response.body);
        const { result } = response.json<{ result?: { isError: boolean } }>();
        assert.equal(result?.isError, false, response.body);
        const storeWrites = writes.count - before.writes;
        const files = await snapshot(service.config.dataDir);
        if (behaviour === "reads") {
          assert.equal(storeWrites, 0, `${tool.name} declares "reads" but wrote to the store`);
          assert.deepEqual(files, before.files, `${tool.name} declares "reads" but wrote files`);
        } else {
          const stored = storeWrites > 0 || !isDeepStrictEqual(files, before.files);
          assert.ok(stored, `${tool.name} declares "writes" but stored nothing`);
        }
      }
    });
  }
});
