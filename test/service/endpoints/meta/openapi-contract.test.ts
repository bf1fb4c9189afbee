/**
 * The contract of `/openapi.json` (issue 14): lint-clean under Redocly's recommended ruleset
 * (`redocly.yaml` says which rule is off and why), every keyed operation declaring its
 * security and its refusals with the statuses of the one error table, and good enough to
 * generate a typed client from: types are generated with openapi-typescript from the
 * document the app serves, a client written against them is type-checked by tsc, and that
 * client calls `POST /verify` over a real socket with openapi-fetch.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";
import openapiTS, { astToString } from "openapi-typescript";
import { ERROR_STATUS, isErrorCode } from "../../../../src/service/errors.js";
import { testSettings } from "../../../payments/support.js";
import { corpusBytes } from "../../../support/corpus.js";
import { startTestService, type TestService } from "../../support/service.js";

const run = promisify(execFile);
const ROOT = resolve(".");
/** Redocly must not phone home from a test: no telemetry, no update check. */
const QUIET_REDOCLY = {
  ...process.env,
  REDOCLY_TELEMETRY: "off",
  REDOCLY_SUPPRESS_UPDATE_NOTICE: "true",
};

interface Response {
  description: string;
  headers?: Record<string, unknown>;
}
interface Operation {
  operationId?: string;
  summary?: string;
  tags?: string[];
  security?: Record<string, unknown>[];
  responses: Record<string, Response>;
}
interface Document {
  servers?: { url: string }[];
  components: { securitySchemes?: Record<string, { type: string; name?: string }> };
  paths: Record<string, Record<string, Operation>>;
}

function operations(document: Document): [string, Operation][] {
  return Object.entries(document.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(
      ([method, operation]) =>
        [`${method.toUpperCase()} ${path}`, operation] as [string, Operation],
    ),
  );
}

const KEYED = [
  "POST /verify",
  "POST /verify-receipt",
  "POST /verify-anchor",
  "POST /anchors",
  "POST /notarize",
  "POST /conformance",
];
const LEASED = ["POST /erc8004/validate", "POST /crystals"];
/** Documented only to say they answer 405 (redocly.yaml). */
const NOT_OFFERED = ["GET /mcp", "DELETE /mcp"];

async function served(service: TestService): Promise<Document> {
  const response = await service.app.inject({ method: "GET", url: "/openapi.json" });
  assert.equal(response.statusCode, 200);
  return response.json();
}

async function lint(document: Document, directory: string, name: string) {
  const file = join(directory, name);
  await writeFile(file, JSON.stringify(document, null, 2));
  const cli = join(ROOT, "node_modules/@redocly/cli/bin/cli.js");
  const args = [cli, "lint", "--config", join(ROOT, "redocly.yaml"), "--format=json", file];
  const { stdout } = await run(process.execPath, args, { env: QUIET_REDOCLY }).catch(
    (failure: { stdout?: string }) => ({ stdout: failure.stdout ?? "" }),
  );
  return JSON.parse(stdout) as {
    totals: { errors: number; warnings: number };
    problems: { ruleId: string; message: string; location: { pointer: string }[] }[];
  };
}

function assertClean(report: Awaited<ReturnType<typeof lint>>) {
  const problems = report.problems.map(
    (problem) => `${problem.ruleId} at ${problem.location[0]?.pointer}: ${problem.message}`,
  );
  assert.deepEqual(problems, []);
  assert.deepEqual(report.totals, { ...report.totals, errors: 0, warnings: 0 });
}

describe("/openapi.json, payments off (the default)", () => {
  let service: TestService;
  let document: Document;
  let directory: string;
  before(async () => {
    service = await startTestService();
    document = await served(service);
    directory = await mkdtemp(join(ROOT, "node_modules/.cache-openapi-"));
  });
  after(async () => {
    await service.close();
    await rm(directory, { recursive: true, force: true });
  });

  test("passes `redocly lint` (recommended) with no error and no warning", async () => {
    assertClean(await lint(document, directory, "openapi.json"));
  });

  test("names every operation once, with a summary and a declared tag", () => {
    const ids = new Set<string>();
    for (const [name, operation] of operations(document)) {
      assert.match(operation.operationId ?? "", /^[a-z][A-Za-z0-9]*$/, name);
      assert.ok(!ids.has(operation.operationId ?? ""), `${name}: operationId repeated`);
      ids.add(operation.operationId ?? "");
      assert.ok(operation.summary, `${name} has no summary`);
      assert.equal(operation.tags?.length, 1, name);
    }
    assert.equal(document.paths["/verify"]?.post?.operationId, "verify");
  });

  test("a relative server unless PUBLIC_BASE_URL is set", () => {
    assert.deepEqual(
      document.servers?.map((server) => server.url),
      ["/"],
    );
  });

  test("keyed operations declare the key schemes and 401, 413, 429; keyless ones need nothing", () => {
    assert.deepEqual(Object.keys(document.components.securitySchemes ?? {}).sort(), [
      "bearerKey",
      "internalToken",
      "svcKey",
    ]);
    for (const [name, operation] of operations(document)) {
      if (KEYED.includes(name) || LEASED.includes(name)) {
        assert.deepEqual(operation.security, [{ bearerKey: [] }, { svcKey: [] }], name);
        for (const status of ["401", "413", "429"]) {
          assert.ok(operation.responses[status], `${name} lists no ${status}`);
        }
        assert.match(operation.responses["401"]?.description ?? "", /`missing_key`, `invalid_key`/);
        assert.equal(operation.responses["402"], undefined, `${name}: 402 without payments`);
      } else if (name === "POST /mcp") {
        assert.deepEqual(operation.security, [{}, { bearerKey: [] }, { svcKey: [] }]);
      } else if (name === "POST /payment-receipts") {
        assert.deepEqual(operation.security, [{ internalToken: [] }]);
      } else {
        assert.deepEqual(operation.security, [], `${name} is keyless`);
      }
    }
  });

  test("every success is documented (but for the two 405-only operations)", () => {
    for (const [name, operation] of operations(document)) {
      const success = Object.keys(operation.responses).some((status) => status.startsWith("2"));
      assert.equal(success, !NOT_OFFERED.includes(name), name);
    }
  });

  test("every error code a response names is answered with that status (ERROR_STATUS)", () => {
    let named = 0;
    for (const [name, operation] of operations(document)) {
      for (const [status, response] of Object.entries(operation.responses)) {
        if (Number(status) < 400) continue;
        for (const [, code] of response.description.matchAll(/`([a-z0-9_]+)`/g)) {
          if (code === undefined || !isErrorCode(code)) continue;
          named++;
          assert.equal(ERROR_STATUS[code], Number(status), `${name} ${status} names ${code}`);
        }
      }
    }
    assert.ok(named > 100, `only ${named} codes named`);
  });
});

describe("/openapi.json, payments on", () => {
  let service: TestService;
  let document: Document;
  let directory: string;
  before(async () => {
    service = await startTestService({
      payments: {
        settings: testSettings(),
        facilitatorUrl: null,
        publicBaseUrl: "https://receiptd.example",
      },
      openApiServerUrl: "https://receiptd.example/",
    });
    document = await served(service);
    directory = await mkdtemp(join(ROOT, "node_modules/.cache-openapi-"));
  });
  after(async () => {
    await service.close();
    await rm(directory, { recursive: true, force: true });
  });

  test("passes `redocly lint` (recommended) with no error and no warning", async () => {
    assertClean(await lint(document, directory, "openapi.json"));
  });

  test("names PUBLIC_BASE_URL as its server", () => {
    assert.deepEqual(
      document.servers?.map((server) => server.url),
      ["https://receiptd.example"],
    );
  });

  test("keyed operations offer x402 and document the 402 challenge and its header", () => {
    const x402 = document.components.securitySchemes?.x402;
    assert.deepEqual(x402 && { type: x402.type, name: x402.name }, {
      type: "apiKey",
      name: "PAYMENT-SIGNATURE",
    });
    for (const name of [...KEYED, ...LEASED]) {
      const [, operation] = operations(document).find(([key]) => key === name) ?? [];
      assert.ok(operation, name);
      const schemes = (operation.security ?? []).flatMap((alternative) => Object.keys(alternative));
      assert.ok(schemes.includes("x402"), `${name} does not offer x402`);
      assert.equal(schemes.includes("passToken"), LEASED.includes(name), name);
      const challenge = operation.responses["402"];
      assert.ok(challenge, `${name} lists no 402`);
      assert.match(challenge.description, /`payment_required`/);
      assert.ok(challenge.headers?.["PAYMENT-REQUIRED"], `${name}: 402 without its header`);
    }
  });
});

describe("a typed client generated from /openapi.json", () => {
  let service: TestService;
  let directory: string;
  let baseUrl: string;
  before(async () => {
    service = await startTestService();
    await service.app.listen({ port: 0, host: "127.0.0.1" });
    const address = service.app.server.address();
    assert.ok(address !== null && typeof address === "object");
    baseUrl = `http://127.0.0.1:${address.port}`;
    // Inside node_modules, so that the client resolves openapi-fetch as an application would.
    directory = await mkdtemp(join(ROOT, "node_modules/.cache-openapi-"));
  });
  after(async () => {
    await service.close();
    await rm(directory, { recursive: true, force: true });
  });

  test("type-checks against the generated types and calls POST /verify", async () => {
    const document = await served(service);
    await writeFile(
      join(directory, "api.d.ts"),
      astToString(await openapiTS(JSON.stringify(document))),
    );
    await writeFile(join(directory, "client.ts"), CLIENT);
    await writeFile(join(directory, "bundle.json"), corpusBytes("vectors/01_happy_minimal.json"));
    await writeFile(
      join(directory, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          noEmit: true,
          target: "ES2022",
          module: "NodeNext",
          moduleResolution: "NodeNext",
          skipLibCheck: true,
          types: ["node"],
        },
        files: ["client.ts", "api.d.ts"],
      }),
    );
    await writeFile(join(directory, "package.json"), JSON.stringify({ type: "module" }));

    // The client compiles: its typed reads (the verdict enum, the error code union) hold,
    // and its deliberate mistakes are caught (`@ts-expect-error` fails the build otherwise).
    const tsc = join(ROOT, "node_modules/typescript/bin/tsc");
    await run(process.execPath, [tsc, "-p", join(directory, "tsconfig.json")]).catch(
      (failure: { stdout?: string }) => assert.fail(`tsc: ${failure.stdout}`),
    );

    const { stdout } = await run(
      process.execPath,
      ["--import", "tsx", join(directory, "client.ts")],
      {
        cwd: ROOT,
        env: { ...process.env, BASE_URL: baseUrl, SVC_KEY: String(service.key) },
      },
    );
    const seen = JSON.parse(stdout);
    assert.deepEqual(seen, {
      status: 200,
      verdict: "TRUSTED",
      service: "continuity-receipt-verify",
      refusal: { status: 401, error: "missing_key" },
    });
  });
});

/** The client an application would write, against the generated `paths`. */
const CLIENT = `
import { readFileSync } from "node:fs";
import createClient from "openapi-fetch";
import type { components, paths } from "./api.js";

type Verdict = "TRUSTED" | "PROVISIONAL" | "INSUFFICIENT_EVIDENCE" | "UNTRUSTED";

const client = createClient<paths>({ baseUrl: process.env.BASE_URL });
const bundle = JSON.parse(readFileSync(new URL("./bundle.json", import.meta.url), "utf8"));

const { data, response } = await client.POST("/verify", {
  headers: { "X-SVC-Key": process.env.SVC_KEY },
  body: { bundle },
});
if (data === undefined || !("verdict" in data)) throw new Error("no verdict payload");
const verdict: Verdict = data.verdict;
// @ts-expect-error: a verdict is one of the four, typed from the document
const notAVerdict: "MAYBE" = data.verdict;
void notAVerdict;

const refused = await client.POST("/verify", { body: { bundle } });
const code: components["schemas"]["ErrorCode"] | undefined = refused.error?.error;
// @ts-expect-error: error codes are the table's, typed from the document
const notACode: "teapot" | undefined = refused.error?.error;
void notACode;

process.stdout.write(
  JSON.stringify({
    status: response.status,
    verdict,
    service: data.service,
    refusal: { status: refused.response.status, error: code },
  }),
);
`;
