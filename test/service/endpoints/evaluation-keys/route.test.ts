/**
 * Evaluation keys in embedded mode: the shared flow (flow-contract.ts), the feature switched
 * off, the client address behind a trusted proxy, and what `/info` and `/openapi.json` say.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { nodeSha256 } from "../../../../src/access/evaluation/node-sha256.js";
import { solveProofOfWork } from "../../../../src/portable/proof-of-work.js";
import { loadConfig } from "../../../../src/service/config.js";
import { startupSummary } from "../../../../src/service/server.js";
import { startTestService, type TestService } from "../../support/service.js";
import {
  type EvaluationDeployment,
  evaluationKeysFlow,
  FLOW_ANONYMOUS_CAP,
  FLOW_TERMS,
  T0,
} from "./flow-contract.js";

evaluationKeysFlow("embedded", async (terms): Promise<EvaluationDeployment> => {
  const clock = { now: T0 };
  const logs: string[] = [];
  const auditDir = await mkdtemp(join(tmpdir(), "receiptd-evaluation-audit-"));
  const service = await startTestService(
    {
      evaluationKeys: terms,
      limits: {
        anonymousDailyCap: FLOW_ANONYMOUS_CAP,
        anonymousAddressDailyCap: FLOW_ANONYMOUS_CAP,
      },
      auditDir,
      logLevel: "trace",
      logDestination: { write: (line) => logs.push(line) },
    },
    { anonymous: true, clock: () => clock.now },
  );
  return {
    instances: [service],
    clock,
    logs,
    auditDir,
    cliEnv: { DATA_DIR: service.config.dataDir },
    async close() {
      await service.close();
      await rm(auditDir, { recursive: true, force: true });
    },
  };
});

async function solved(service: TestService) {
  const response = await service.app.inject({ method: "GET", url: "/keys/evaluation/challenge" });
  const { challenge, difficulty } = response.json();
  return JSON.stringify({ challenge, nonce: solveProofOfWork(nodeSha256, challenge, difficulty) });
}

describe("evaluation keys switched off (EVALUATION_KEYS=off)", () => {
  let service: TestService;
  before(async () => {
    service = await startTestService({ evaluationKeys: null }, { anonymous: true });
  });
  after(() => service.close());

  test("both routes answer 404 evaluation_keys_disabled, and /info says null", async () => {
    const detail =
      "this service does not issue evaluation keys (EVALUATION_KEYS=off); ask its operator for an API key";
    for (const [method, url] of [
      ["GET", "/keys/evaluation/challenge"],
      ["POST", "/keys/evaluation"],
    ] as const) {
      const response = await service.app.inject({
        method,
        url,
        payload: method === "POST" ? "{}" : undefined,
      });
      assert.equal(response.statusCode, 404, url);
      assert.deepEqual(response.json(), { error: "evaluation_keys_disabled", detail });
      assert.equal(response.headers["cache-control"], "no-store");
    }
    const info = await service.app.inject({ method: "GET", url: "/info" });
    assert.equal(info.json().evaluation_keys, null);
  });

  test("the startup line says whether anyone may obtain an evaluation key", () => {
    const summary = (env: Record<string, string>) =>
      startupSummary(loadConfig(env), "did:key:z", "http://127.0.0.1:1").evaluationKeys;
    assert.equal(summary({}), "on");
    assert.equal(summary({ EVALUATION_KEYS: "off" }), "off");
  });
});

describe("the client address behind a trusted proxy", () => {
  const terms = { ...FLOW_TERMS, perDay: 100 };

  test("without TRUST_PROXY, X-Forwarded-For is ignored: the socket's peer is the client", async () => {
    const service = await startTestService({ evaluationKeys: terms }, { anonymous: true });
    try {
      const send = async (forwarded: string) =>
        service.app.inject({
          method: "POST",
          url: "/keys/evaluation",
          headers: { "x-forwarded-for": forwarded },
          payload: await solved(service),
          remoteAddress: "10.0.0.5",
        });
      assert.equal((await send("192.0.2.10")).statusCode, 201);
      const second = await send("192.0.2.11");
      assert.equal(second.json().error, "evaluation_limit_reached");
    } finally {
      await service.close();
    }
  });

  test("with TRUST_PROXY naming the proxy, the forwarded address is the client", async () => {
    const service = await startTestService(
      { evaluationKeys: terms, trustProxy: ["10.0.0.0/8"] },
      { anonymous: true },
    );
    try {
      const send = async (forwarded: string, peer = "10.0.0.5") =>
        service.app.inject({
          method: "POST",
          url: "/keys/evaluation",
          headers: { "x-forwarded-for": forwarded },
          payload: await solved(service),
          remoteAddress: peer,
        });
      assert.equal((await send("192.0.2.10")).statusCode, 201);
      assert.equal((await send("192.0.2.11")).statusCode, 201);
      assert.equal((await send("192.0.2.10")).json().error, "evaluation_limit_reached");
      // A client that is not a trusted proxy cannot pick its address with the header.
      assert.equal((await send("192.0.2.12", "198.51.100.1")).statusCode, 201);
      assert.equal(
        (await send("192.0.2.13", "198.51.100.1")).json().error,
        "evaluation_limit_reached",
      );
    } finally {
      await service.close();
    }
  });
});

describe("the difficulty rises as the day's keys are issued", () => {
  let service: TestService;
  before(async () => {
    service = await startTestService(
      { evaluationKeys: { ...FLOW_TERMS, perDay: 4, powBits: 3, powRampBits: 4 } },
      { anonymous: true },
    );
  });
  after(() => service.close());

  test("each challenge, and /info, states the difficulty of the moment", async () => {
    const difficulties: number[] = [];
    const stated: number[] = [];
    for (const address of ["192.0.2.1", "198.51.100.1", "203.0.113.1"]) {
      const info = (await service.app.inject({ method: "GET", url: "/info" })).json();
      stated.push(info.evaluation_keys.proof_of_work.difficulty);
      const answer = await service.app.inject({ method: "GET", url: "/keys/evaluation/challenge" });
      const { challenge, difficulty } = answer.json();
      difficulties.push(difficulty);
      assert.equal(challenge.split(".")[1], String(difficulty));
      const issued = await service.app.inject({
        method: "POST",
        url: "/keys/evaluation",
        payload: { challenge, nonce: solveProofOfWork(nodeSha256, challenge, difficulty) },
        remoteAddress: address,
      });
      assert.equal(issued.statusCode, 201);
    }
    assert.deepEqual(difficulties, [3, 4, 5]);
    assert.deepEqual(stated, difficulties);
  });
});

describe("the terms in /info and /openapi.json", () => {
  let service: TestService;
  before(async () => {
    service = await startTestService({ evaluationKeys: FLOW_TERMS }, { anonymous: true });
  });
  after(() => service.close());

  test("/info states the terms and how to get a key", async () => {
    const info = (await service.app.inject({ method: "GET", url: "/info" })).json();
    assert.deepEqual(info.evaluation_keys, {
      challenge: "GET /keys/evaluation/challenge",
      issue: 'POST /keys/evaluation {"challenge","nonce"}',
      key_daily_cap: 3,
      key_lifetime_hours: 1,
      keys_per_address_daily: 1,
      keys_per_network_daily: 100,
      keys_per_day: 4,
      proof_of_work: {
        algorithm: "sha256-leading-zero-bits",
        difficulty: 6,
        base_difficulty: 6,
        ramp_bits: 0,
        ramp: "difficulty = base_difficulty + floor(ramp_bits × keys issued today / keys_per_day), at most 32; each challenge states its own",
        rule: "find a nonce (1–64 characters of A–Z a–z 0–9 - _) such that SHA-256 of the ASCII bytes of challenge followed directly by the ASCII bytes of nonce starts with `difficulty` zero bits",
        challenge_ttl_s: 300,
      },
      counted_against:
        "the anonymous daily cap: the challenge and the issuance are one anonymous call each",
      billing: "never billed; keys are shown once and stored only as their SHA-256",
    });
    assert.match(info.endpoints["POST /keys/evaluation"], /evaluation API key/);
    assert.match(info.endpoints["GET /keys/evaluation/challenge"], /proof-of-work challenge/);
    assert.match(info.privacy.client_addresses, /keyed hash/);
  });

  test("/openapi.json: two keyless operations with their codes; keyed ones may answer key_expired", async () => {
    const document = (await service.app.inject({ method: "GET", url: "/openapi.json" })).json();
    const issue = document.paths["/keys/evaluation"].post;
    const challenge = document.paths["/keys/evaluation/challenge"].get;
    assert.equal(issue.operationId, "issueEvaluationKey");
    assert.equal(challenge.operationId, "getEvaluationChallenge");
    assert.deepEqual(issue.security, []);
    assert.deepEqual(challenge.security, []);
    assert.deepEqual(Object.keys(issue.responses), [
      "201",
      "400",
      "404",
      "409",
      "413",
      "415",
      "429",
      "500",
      "503",
    ]);
    for (const code of [
      "invalid_challenge",
      "challenge_expired",
      "insufficient_proof_of_work",
      "invalid_json",
    ]) {
      assert.match(issue.responses["400"].description, new RegExp(code));
    }
    assert.match(issue.responses["429"].description, /evaluation_limit_reached/);
    assert.match(issue.responses["429"].description, /daily_cap_reached/);
    assert.equal(issue.responses["429"].description.includes("conflicting_credentials"), false);
    assert.deepEqual(issue.requestBody.content["application/json"].schema.required, [
      "challenge",
      "nonce",
    ]);
    assert.match(document.paths["/verify"].post.responses["401"].description, /key_expired/);
    assert.ok(document.tags.some((tag: { name: string }) => tag.name === "keys"));
  });
});
