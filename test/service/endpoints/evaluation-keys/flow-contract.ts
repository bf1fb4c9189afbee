/**
 * The whole evaluation-key flow over HTTP, as one contract run in both modes: embedded (one
 * instance, memory and files) and distributed (two instances sharing Redis, PostgreSQL and the
 * deployment's internal token, asked in turn, so every step also crosses instances).
 *
 * The steps share one deployment and run in order: a challenge, a key for it, the key on
 * `POST /verify` with a corpus bundle, its daily cap, replays, the per-address and overall
 * limits, each refusal code, the listing, the expiry, the audit and the bill, the logs.
 */
import assert from "node:assert/strict";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { LightMyRequestResponse } from "fastify";
import { meterMonth } from "../../../../src/access/billing.js";
import { nodeSha256 } from "../../../../src/access/evaluation/node-sha256.js";
import { main as keysCli } from "../../../../src/cli/keys.js";
import { parseChallenge, solveProofOfWork } from "../../../../src/portable/proof-of-work.js";
import type { EvaluationKeysConfig } from "../../../../src/service/config.js";
import { corpusBytes } from "../../../support/corpus.js";
import type { TestService } from "../../support/service.js";

/** 2026-11-21T10:00:00Z: fourteen hours before the next UTC midnight. */
export const T0 = Date.parse("2026-11-21T10:00:00Z");

export const FLOW_TERMS: EvaluationKeysConfig = {
  keyDailyCap: 3,
  ttlHours: 1,
  perAddressDaily: 1,
  // The flow's addresses share 192.0.2.0/24: the network limit is issuer.test.ts's to test.
  perNetworkDaily: 100,
  perDay: 4,
  powBits: 6,
  powRampBits: 0,
};

/**
 * The anonymous daily cap the deployments run with, and each address's share of it (the same:
 * the shares are anonymous-shares.test.ts's to test).
 */
export const FLOW_ANONYMOUS_CAP = 500;

export interface EvaluationDeployment {
  /** One instance when embedded; two sharing everything when distributed. */
  instances: TestService[];
  /** The clock every instance reads (starts at T0). */
  clock: { now: number };
  /** Every log line of every instance (LOG_LEVEL trace). */
  logs: string[];
  /** The audit directory the instances share. */
  auditDir: string;
  /** The environment `receiptd keys` needs to act on the deployment's key store. */
  cliEnv: Record<string, string>;
  close(): Promise<void>;
}

const BUNDLE = corpusBytes("vectors/01_happy_minimal.json");
const JSON_TYPE = { "content-type": "application/json" };

export function evaluationKeysFlow(
  mode: string,
  deploy: (terms: EvaluationKeysConfig) => Promise<EvaluationDeployment>,
): void {
  describe(`evaluation keys over HTTP: ${mode}`, () => {
    let deployment: EvaluationDeployment;
    let turn = 0;
    /** The next instance in turn, so consecutive steps land on different ones. */
    const next = () => {
      const { instances } = deployment;
      turn += 1;
      return instances[turn % instances.length] as TestService;
    };
    /** Secrets handed out in the flow; none may reach a log line or the audit. */
    const secrets: string[] = [];

    async function challenge(service = next()) {
      const response = await service.app.inject({
        method: "GET",
        url: "/keys/evaluation/challenge",
      });
      assert.equal(response.statusCode, 200, response.body);
      const body = response.json() as { challenge: string; difficulty: number };
      const nonce = solveProofOfWork(nodeSha256, body.challenge, body.difficulty, {
        prefix: "flow-",
      });
      assert.ok(nonce !== null);
      secrets.push(body.challenge);
      return { challenge: body.challenge, nonce };
    }

    function issue(
      body: unknown,
      options: { address?: string; headers?: Record<string, string>; service?: TestService } = {},
    ): Promise<LightMyRequestResponse> {
      return (options.service ?? next()).app.inject({
        method: "POST",
        url: "/keys/evaluation",
        headers: { ...JSON_TYPE, ...options.headers },
        payload: typeof body === "string" ? body : JSON.stringify(body),
        remoteAddress: options.address ?? "192.0.2.1",
      });
    }

    function verify(key: string, service = next()) {
      return service.app.inject({
        method: "POST",
        url: "/verify",
        headers: { authorization: `Bearer ${key}` },
        payload: BUNDLE,
      });
    }

    let key = "";
    let keyId = "";
    let spent = { challenge: "", nonce: "" };

    before(async () => {
      deployment = await deploy(FLOW_TERMS);
    });
    after(() => deployment.close());

    test("a challenge: its difficulty and expiry, never cached, one anonymous call", async () => {
      const response = await next().app.inject({
        method: "GET",
        url: "/keys/evaluation/challenge",
      });
      assert.equal(response.statusCode, 200);
      assert.equal(response.headers["cache-control"], "no-store");
      assert.equal(response.headers["x-ratelimit-limit"], String(FLOW_ANONYMOUS_CAP));
      const body = response.json();
      assert.deepEqual(Object.keys(body), ["challenge", "algorithm", "difficulty", "expires_at"]);
      assert.equal(body.algorithm, "sha256-leading-zero-bits");
      assert.equal(body.difficulty, FLOW_TERMS.powBits);
      assert.equal(body.expires_at, "2026-11-21T10:05:00Z");
      assert.deepEqual(parseChallenge(body.challenge)?.expiresAt, T0 / 1000 + 300);
    });

    test("a solved challenge buys a key at once, shown once, with its terms", async () => {
      spent = await challenge();
      const response = await issue(spent);
      assert.equal(response.statusCode, 201, response.body);
      assert.equal(response.headers["cache-control"], "no-store");
      const body = response.json();
      assert.match(body.key, /^svc_[0-9a-f]{48}$/);
      assert.equal(body.name, `evaluation-${body.id}`);
      assert.deepEqual(
        { ...body, key: "", id: "", name: "", note: "" },
        {
          key: "",
          id: "",
          name: "",
          kind: "evaluation",
          daily_cap: 3,
          created_at: "2026-11-21T10:00:00Z",
          expires_at: "2026-11-21T11:00:00Z",
          note: "",
        },
      );
      assert.match(body.note, /never billed/);
      key = body.key;
      keyId = body.id;
      secrets.push(key, spent.nonce);
    });

    test("the key verifies a corpus bundle on POST /verify, on any instance", async () => {
      const response = await verify(key);
      assert.equal(response.statusCode, 200, response.body);
      assert.equal(response.json().verdict, "TRUSTED");
      assert.equal(response.headers["x-ratelimit-limit"], "3");
      assert.equal(response.headers["x-ratelimit-remaining"], "2");
    });

    test("its small daily cap holds across instances: the fourth call of the day is 429", async () => {
      for (const remaining of ["1", "0"]) {
        const response = await verify(key);
        assert.equal(response.statusCode, 200);
        assert.equal(response.headers["x-ratelimit-remaining"], remaining);
      }
      const refused = await verify(key);
      assert.equal(refused.statusCode, 429);
      assert.equal(refused.json().error, "daily_cap_reached");
    });

    test("a spent challenge is refused everywhere: 409 challenge_already_used", async () => {
      for (const service of deployment.instances) {
        const response = await issue(spent, { service, address: "198.51.100.77" });
        assert.equal(response.statusCode, 409);
        assert.equal(response.json().error, "challenge_already_used");
      }
    });

    test("the same address past its limit is refused; another address is not", async () => {
      const refused = await issue(await challenge());
      assert.equal(refused.statusCode, 429, refused.body);
      assert.deepEqual(refused.json(), {
        error: "evaluation_limit_reached",
        detail:
          "this client address has obtained 1 evaluation key(s) today, the limit; more after 00:00 UTC",
        limit: 1,
      });
      assert.equal(refused.headers["retry-after"], String(14 * 3600));
      const other = await issue(await challenge(), { address: "192.0.2.2" });
      assert.equal(other.statusCode, 201, other.body);
      secrets.push(other.json().key);
    });

    test("each refusal of a challenge has its own code and counts against no limit", async () => {
      const fresh = await challenge();
      const fields = parseChallenge(fresh.challenge);
      assert.ok(fields !== null);
      let weak = 0;
      while (
        solveProofOfWork(nodeSha256, fresh.challenge, FLOW_TERMS.powBits, {
          start: weak,
          maxAttempts: 1,
        }) !== null
      ) {
        weak += 1;
      }
      const address = "203.0.113.50";
      const cases: [unknown, number, string][] = [
        ['{"challenge":', 400, "invalid_json"],
        ['{"challenge":"x","challenge":"y","nonce":"1"}', 400, "invalid_json"],
        [{ challenge: fresh.challenge }, 400, "bad_shape"],
        [{ ...fresh, extra: 1 }, 400, "bad_shape"],
        [{ challenge: fresh.challenge, nonce: "not a nonce" }, 400, "bad_shape"],
        [
          { ...fresh, challenge: fresh.challenge.replace(fields.mac, "A".repeat(43)) },
          400,
          "invalid_challenge",
        ],
        [
          { ...fresh, challenge: fresh.challenge.replace(`evk1.${fields.difficulty}.`, "evk1.0.") },
          400,
          "invalid_challenge",
        ],
        [{ challenge: fresh.challenge, nonce: String(weak) }, 400, "insufficient_proof_of_work"],
      ];
      for (const [body, status, code] of cases) {
        const response = await issue(body, { address });
        assert.equal(response.statusCode, status, `${JSON.stringify(body)}: ${response.body}`);
        assert.equal(response.json().error, code, JSON.stringify(body));
        assert.equal(response.headers["cache-control"], "no-store");
      }
      const late = await challenge();
      deployment.clock.now += 300_000;
      const expired = await issue(late, { address });
      deployment.clock.now -= 300_000;
      assert.equal(expired.statusCode, 400);
      assert.equal(expired.json().error, "challenge_expired");
      const tooLarge = await issue(`{"challenge":"${"x".repeat(5000)}","nonce":"1"}`, { address });
      assert.equal(tooLarge.statusCode, 413);
      assert.deepEqual(tooLarge.json(), { error: "body_too_large", limit: 4096 });
      // None of these counted: the address still gets its key, with the first challenge.
      const granted = await issue(fresh, { address });
      assert.equal(granted.statusCode, 201, granted.body);
      secrets.push(granted.json().key);
    });

    test("credentials are not read: a key presented with the request changes nothing", async () => {
      const response = await issue(await challenge(), {
        address: "192.0.2.3",
        headers: { authorization: `Bearer ${key}`, "x-svc-key": `svc_${"0".repeat(48)}` },
      });
      assert.equal(response.statusCode, 201, response.body);
      // Counted against the anonymous cap, not against the key presented.
      assert.equal(response.headers["x-ratelimit-limit"], String(FLOW_ANONYMOUS_CAP));
      secrets.push(response.json().key);
    });

    test("past the overall daily limit every address is refused: evaluation_keys_exhausted", async () => {
      const refused = await issue(await challenge(), { address: "192.0.2.4" });
      assert.equal(refused.statusCode, 429, refused.body);
      assert.deepEqual(refused.json(), {
        error: "evaluation_keys_exhausted",
        detail: "the service has issued 4 evaluation keys today, the limit; more after 00:00 UTC",
        limit: 4,
      });
      assert.equal(refused.headers["retry-after"], String(14 * 3600));
    });

    test("receiptd keys list marks the issued keys as evaluation keys, with their expiry", async () => {
      let out = "";
      // --all: the CLI judges expiry by the wall clock, not this deployment's clock.
      const status = await keysCli(
        ["list", "--json", "--all"],
        { stdout: (text) => (out += text), stderr: () => {} },
        deployment.cliEnv,
      );
      assert.equal(status, 0);
      const listed = JSON.parse(out) as Record<string, unknown>[];
      const evaluation = listed.filter((entry) => entry.kind === "evaluation");
      assert.equal(evaluation.length, 4);
      assert.deepEqual(
        evaluation.find((entry) => entry.id === keyId),
        {
          id: keyId,
          name: `evaluation-${keyId}`,
          plan: "evaluation",
          kind: "evaluation",
          daily_cap: 3,
          effective_daily_cap: 3,
          created_at: "2026-11-21T10:00:00Z",
          expires_at: "2026-11-21T11:00:00Z",
          // The CLI reads the wall clock, not this deployment's.
          expired: Date.now() >= Date.parse("2026-11-21T11:00:00Z"),
          revoked_at: null,
        },
      );
      for (const secret of secrets) assert.equal(out.includes(secret), false);
    });

    test("once its lifetime is over the key is refused: 401 key_expired", async () => {
      deployment.clock.now = T0 + 3_600_000;
      for (const service of deployment.instances) {
        const response = await verify(key, service);
        assert.equal(response.statusCode, 401);
        assert.equal(
          response.headers["www-authenticate"],
          'Bearer realm="receiptd", error="invalid_token"',
        );
        assert.deepEqual(response.json(), {
          error: "key_expired",
          hint: "the key expired at 2026-11-21T11:00:00Z; evaluation keys are short-lived: get a new one (POST /keys/evaluation) or ask the operator for a key",
          docs: "README.md#access-and-payments",
        });
      }
    });

    test("its calls are audited as eval:<id> and never billed", async () => {
      for (const service of deployment.instances) await service.app.accessServices.audit.flush();
      const usage = await meterMonth(deployment.auditDir, "2026-11");
      // Three results and the 429; the 401s are anonymous lines (no key was accepted).
      assert.deepEqual(usage.evaluation, { keys: 1, calls: 3, unbilled: 1 });
      assert.deepEqual(usage.keys, []);
      assert.equal(usage.totalCents, 0);
    });

    test("no log line and no audit line holds a key, a challenge or a nonce", async () => {
      const files = await readdir(deployment.auditDir);
      const audit = (
        await Promise.all(files.map((name) => readFile(join(deployment.auditDir, name), "utf8")))
      ).join("");
      const logged = deployment.logs.join("\n");
      assert.ok(deployment.logs.length > 20);
      assert.ok(audit.includes(`"principal":"eval:${keyId}"`));
      for (const secret of secrets) {
        assert.equal(logged.includes(secret), false, "a secret was logged");
        assert.equal(audit.includes(secret), false, "a secret reached the audit");
      }
      for (const address of ["192.0.2.1", "192.0.2.2", "203.0.113.50"]) {
        assert.equal(logged.includes(address) || audit.includes(address), false, address);
      }
    });
  });
}
