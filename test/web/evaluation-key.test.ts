/**
 * The evaluation-key logic of the page (src/web/evaluation-key.ts), under Node: the terms read
 * from `/info`, every refusal of docs/evaluation-keys.md in words with its exact code, and
 * the flow (challenge, proof of work, key) against a fake service that checks the work with
 * the server's own checker.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";
import { nodeSha256 } from "../../src/access/evaluation/node-sha256.js";
import { checkProofOfWork } from "../../src/portable/proof-of-work.js";
import {
  describeRefusal,
  evaluationTermsOf,
  formatUtc,
  formatWait,
  type KeyRequestOptions,
  type KeyRequestOutcome,
  requestEvaluationKey,
} from "../../src/web/evaluation-key.js";

interface Exchange {
  name: string;
  service: string;
  /** Raw-socket exchanges record no method or URL. */
  request: { method?: string; url?: string };
  response: { status: number; headers: Record<string, string>; json?: unknown };
}

/** The service's recorded answers (test/service/recorded-answers.json): real answers. */
const recorded = (
  JSON.parse(
    readFileSync(new URL("../service/recorded-answers.json", import.meta.url), "utf8"),
  ) as { exchanges: Exchange[] }
).exchanges;

function recordedAnswer(name: string): Exchange["response"] {
  const exchange = recorded.find((candidate) => candidate.name === name);
  assert.ok(exchange, name);
  return exchange.response;
}

describe("the terms in /info", () => {
  test("the recorded /info of a service with evaluation keys", () => {
    const info = recordedAnswer("evaluation: GET /info (the terms in force)").json;
    assert.deepEqual(evaluationTermsOf(info as Record<string, unknown>), {
      state: "on",
      terms: {
        keyDailyCap: 2,
        keyLifetimeHours: 1,
        keysPerAddressDaily: 1,
        keysPerDay: 2,
        keysPerNetworkDaily: 100,
        difficulty: 8,
        rampBits: 0,
        challengeTtlSeconds: 300,
      },
    });
  });

  test("null is off; absent or unusable terms are unknown", () => {
    assert.deepEqual(evaluationTermsOf({ evaluation_keys: null }), { state: "off" });
    assert.deepEqual(evaluationTermsOf({ service: "receiptd" }), { state: "unknown" });
    assert.deepEqual(evaluationTermsOf({ evaluation_keys: [] }), { state: "unknown" });
    const info = recordedAnswer("evaluation: GET /info (the terms in force)").json as {
      evaluation_keys: Record<string, unknown>;
    };
    const terms = info.evaluation_keys;
    const work = terms.proof_of_work as Record<string, unknown>;
    for (const broken of [
      { ...terms, key_daily_cap: "2" },
      { ...terms, key_lifetime_hours: 0 },
      { ...terms, keys_per_day: 1.5 },
      { ...terms, proof_of_work: { ...work, algorithm: "scrypt" } },
      { ...terms, proof_of_work: { ...work, difficulty: -1 } },
      { ...terms, proof_of_work: null },
    ]) {
      assert.deepEqual(evaluationTermsOf({ evaluation_keys: broken }), { state: "unknown" });
    }
  });
});

describe("words for waits and times", () => {
  test("formatWait", () => {
    assert.equal(formatWait(1), "1 second");
    assert.equal(formatWait(0.2), "1 second");
    assert.equal(formatWait(45), "45 seconds");
    assert.equal(formatWait(300), "5 minutes");
    assert.equal(formatWait(3600), "60 minutes");
    assert.equal(formatWait(7200), "2 h");
    assert.equal(formatWait(37_800), "10 h 30 min");
    assert.equal(formatWait(86_400), "1 day");
    assert.equal(formatWait(-5), "0 seconds");
  });

  test("formatUtc", () => {
    assert.equal(formatUtc(Date.parse("2026-01-02T00:00:00Z")), "2026-01-02 00:00 UTC");
    assert.equal(formatUtc(Date.parse("2026-01-01T14:30:07Z")), "2026-01-01 14:30:07 UTC");
  });
});

describe("refusals in words, with their codes", () => {
  const fallback = /^The service (refused the request|failed to answer)/;

  test("every refusal the service was recorded giving on the two routes has its own words", () => {
    const refusals = recorded.filter(
      (exchange) =>
        exchange.request.url?.startsWith("/keys/evaluation") === true &&
        exchange.response.status >= 400,
    );
    const codes = new Set<string>();
    for (const { name, response } of refusals) {
      const body = response.json as { error: string; detail?: string };
      const refusal = describeRefusal(
        response.status,
        body,
        response.headers["retry-after"] ?? null,
      );
      assert.equal(refusal.code, body.error, name);
      assert.equal(refusal.status, response.status, name);
      assert.doesNotMatch(refusal.words, fallback, name);
      assert.equal(refusal.detail, body.detail ?? null, name);
      codes.add(refusal.code);
    }
    assert.deepEqual([...codes].sort(), [
      "bad_shape",
      "body_too_large",
      "challenge_already_used",
      "challenge_expired",
      "evaluation_keys_disabled",
      "evaluation_keys_exhausted",
      "evaluation_limit_reached",
      "insufficient_proof_of_work",
      "invalid_challenge",
      "invalid_json",
    ]);
  });

  test("evaluation_limit_reached: the limit, the wait to 00:00 UTC, not to be retried now", () => {
    const response = recordedAnswer(
      "evaluation: POST /keys/evaluation, same address again → 429 evaluation_limit_reached",
    );
    const refusal = describeRefusal(429, response.json, response.headers["retry-after"]!);
    assert.deepEqual(
      { ...refusal, detail: null },
      {
        status: 429,
        code: "evaluation_limit_reached",
        words:
          "This address has already had 1 evaluation key today, the most one address may get per UTC day. More in 10 h 30 min, from 00:00 UTC.",
        detail: null,
        retryAfterSeconds: 37_800,
        tryAgainNow: false,
      },
    );
    const exhausted = describeRefusal(
      429,
      { error: "evaluation_keys_exhausted", limit: 200 },
      null,
    );
    assert.equal(
      exhausted.words,
      "The service has issued the 200 evaluation keys it hands out per UTC day, for everyone together. More from 00:00 UTC.",
    );
  });

  test("the refusals of the contract not in the recording: the anonymous cap and the 503s", () => {
    const cap = describeRefusal(
      429,
      { error: "daily_cap_reached", hint: "anonymous daily cap reached; use an API key" },
      "86400",
    );
    assert.equal(cap.code, "daily_cap_reached");
    assert.equal(cap.detail, "anonymous daily cap reached; use an API key");
    assert.equal(cap.retryAfterSeconds, 86_400);
    assert.match(cap.words, /allowance of calls without a key is used up.* Try again in 1 day\.$/);
    assert.equal(cap.tryAgainNow, false);
    for (const code of ["challenge_ledger_unavailable", "store_unavailable"]) {
      const refusal = describeRefusal(503, { error: code, detail: "…" }, "1");
      assert.equal(refusal.code, code);
      assert.doesNotMatch(refusal.words, fallback);
      assert.match(refusal.words, /Try again in 1 second\.$/);
      assert.equal(refusal.tryAgainNow, true);
    }
    const ledger = describeRefusal(503, { error: "challenge_ledger_unavailable" }, null);
    assert.match(ledger.words, /Try again in a moment\.$/);
  });

  test("answers without a code: the status stands in for it", () => {
    const proxy = describeRefusal(502, "<html>Bad Gateway</html>", null);
    assert.equal(proxy.code, "HTTP 502");
    assert.match(proxy.words, /failed to answer \(HTTP 502\)/);
    assert.equal(proxy.tryAgainNow, true);
    const odd = describeRefusal(418, { error: "teapot" }, "x");
    assert.equal(odd.code, "teapot");
    assert.equal(odd.retryAfterSeconds, null);
    assert.equal(odd.tryAgainNow, false);
  });
});

// ---------------------------------------------------------------------------------------------
// The flow, against a fake service.

const SALT = "AAAAAAAAAAAAAAAAAAAAAA";
const MAC = "B".repeat(43);
const T0 = Date.parse("2026-01-01T13:30:00Z");

interface FakeService {
  fetch: typeof fetch;
  calls: { url: string; init: RequestInit | undefined }[];
}

function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", date: new Date(T0).toUTCString(), ...headers },
  });
}

function challengeOf(difficulty: number, lifetimeSeconds = 300): string {
  return `evk1.${difficulty}.${T0 / 1000 + lifetimeSeconds}.${SALT}.${MAC}`;
}

/** A service issuing `difficulty`-bit challenges and a key for any solved one. */
function fakeService(
  options: {
    difficulty?: number;
    lifetimeSeconds?: number;
    challenge?: (call: number) => Response | Promise<Response>;
    issue?: (body: { challenge: string; nonce: string }) => Response | Promise<Response>;
  } = {},
): FakeService {
  const difficulty = options.difficulty ?? 6;
  const calls: FakeService["calls"] = [];
  const fetchFake = async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const url = String(input);
    calls.push({ url, init });
    init?.signal?.throwIfAborted();
    if (url === "/keys/evaluation/challenge") {
      if (options.challenge) return options.challenge(calls.length);
      return json(200, {
        challenge: challengeOf(difficulty, options.lifetimeSeconds),
        algorithm: "sha256-leading-zero-bits",
        difficulty,
        expires_at: "2026-01-01T13:35:00Z",
      });
    }
    assert.equal(url, "/keys/evaluation");
    const body = JSON.parse(String(init?.body)) as { challenge: string; nonce: string };
    if (options.issue) return options.issue(body);
    const solved = checkProofOfWork(nodeSha256, body.challenge, body.nonce, difficulty);
    if (!solved) return json(400, { error: "insufficient_proof_of_work", detail: "…" });
    return json(201, {
      key: `svc_${"ab".repeat(24)}`,
      id: "0123456789ab",
      name: "evaluation-0123456789ab",
      kind: "evaluation",
      daily_cap: 100,
      created_at: "2026-01-01T13:30:00Z",
      expires_at: "2026-01-02T13:30:00Z",
      note: "Shown only now: …",
    });
  };
  return { fetch: fetchFake as typeof fetch, calls };
}

function run(
  service: FakeService,
  extra: Partial<KeyRequestOptions> = {},
): Promise<KeyRequestOutcome> {
  return requestEvaluationKey({
    fetch: service.fetch,
    sha256: nodeSha256,
    now: () => T0,
    ...extra,
  });
}

describe("requestEvaluationKey", () => {
  test("a challenge, the work, a key: steps in order, progress told, POST exactly {challenge, nonce}", async () => {
    const service = fakeService({ difficulty: 10 });
    const steps: string[] = [];
    const progress: number[] = [];
    const outcome = await run(service, {
      batch: 64,
      onStep: (step, bits) => steps.push(bits === undefined ? step : `${step} ${bits}`),
      onProgress: (attempts) => progress.push(attempts),
    });
    assert.equal(outcome.kind, "issued");
    assert.deepEqual(outcome.kind === "issued" ? outcome.key : null, {
      key: `svc_${"ab".repeat(24)}`,
      id: "0123456789ab",
      name: "evaluation-0123456789ab",
      dailyCap: 100,
      createdAt: "2026-01-01T13:30:00Z",
      expiresAt: "2026-01-02T13:30:00Z",
      note: "Shown only now: …",
    });
    assert.deepEqual(steps, ["challenge", "work 10", "issue"]);
    assert.ok(progress.length > 0 && progress.every((n, i) => n === (i + 1) * 64));
    const [get, post] = service.calls;
    assert.equal(get?.init?.method, undefined);
    assert.equal(get?.init?.credentials, "omit");
    assert.equal(post?.init?.method, "POST");
    assert.deepEqual(Object.keys(JSON.parse(String(post?.init?.body))), ["challenge", "nonce"]);
    assert.deepEqual(post?.init?.headers, { "content-type": "application/json" });
  });

  test("refused at the challenge (switched off) or at the key (the address's limit)", async () => {
    const off = await run(
      fakeService({
        challenge: () => json(404, { error: "evaluation_keys_disabled", detail: "off" }),
      }),
    );
    assert.equal(off.kind, "refused");
    assert.equal(off.kind === "refused" && off.step, "challenge");
    assert.equal(off.kind === "refused" && off.refusal.code, "evaluation_keys_disabled");

    const limited = await run(
      fakeService({
        issue: () =>
          json(
            429,
            { error: "evaluation_limit_reached", detail: "…", limit: 2 },
            { "retry-after": "37800" },
          ),
      }),
    );
    assert.equal(limited.kind, "refused");
    if (limited.kind !== "refused") return;
    assert.equal(limited.step, "issue");
    assert.equal(limited.refusal.code, "evaluation_limit_reached");
    assert.equal(limited.refusal.retryAfterSeconds, 37_800);
    assert.match(limited.refusal.words, /already had 2 evaluation keys today/);
  });

  test("no answer: unreachable, at either step", async () => {
    const down = await run(
      fakeService({
        challenge: () => {
          throw new TypeError("Failed to fetch");
        },
      }),
    );
    assert.deepEqual(down, { kind: "unreachable", step: "challenge" });
    const lost = await run(
      fakeService({
        issue: () => {
          throw new TypeError("Failed to fetch");
        },
      }),
    );
    assert.deepEqual(lost, { kind: "unreachable", step: "issue" });
  });

  test("answers not in the documented form are unexpected, never solved or shown", async () => {
    for (const body of [
      { challenge: challengeOf(6), algorithm: "scrypt", difficulty: 6 },
      { challenge: challengeOf(6), algorithm: "sha256-leading-zero-bits", difficulty: 5 },
      { challenge: "evk1.6.x", algorithm: "sha256-leading-zero-bits", difficulty: 6 },
    ]) {
      const outcome = await run(fakeService({ challenge: () => json(200, body) }));
      assert.equal(outcome.kind, "unexpected");
      assert.equal(outcome.kind === "unexpected" && outcome.step, "challenge");
    }
    const noKey = await run(
      fakeService({ issue: () => json(201, { key: "svc_x", kind: "standard" }) }),
    );
    assert.equal(noKey.kind, "unexpected");
    assert.equal(noKey.kind === "unexpected" && noKey.step, "issue");
  });

  test("cancel: while the challenge is fetched, or during the work; no key is asked for", async () => {
    const early = new AbortController();
    early.abort();
    const service = fakeService();
    assert.deepEqual(await run(service, { signal: early.signal }), {
      kind: "cancelled",
      step: "challenge",
    });

    const during = new AbortController();
    const hard = fakeService({ difficulty: 32 });
    const outcome = await run(hard, {
      signal: during.signal,
      batch: 16,
      onProgress: (attempts) => {
        if (attempts >= 64) during.abort();
      },
    });
    assert.deepEqual(outcome, { kind: "cancelled", step: "work" });
    assert.deepEqual(
      hard.calls.map((call) => call.url),
      ["/keys/evaluation/challenge"],
    );
  });

  test("once the key is asked for, cancelling no longer stops it (the key would be lost)", async () => {
    const controller = new AbortController();
    const service = fakeService({ difficulty: 4 });
    const outcome = await run(service, {
      signal: controller.signal,
      onStep: (step) => {
        if (step === "issue") controller.abort();
      },
    });
    assert.equal(outcome.kind, "issued");
    assert.equal(service.calls[1]?.init?.signal, undefined);
  });

  test("the challenge expires during the work: too slow, by the service's clock", async () => {
    // The service's Date says T0 and the challenge lasts 2 s; this page's clock is an hour
    // ahead, which must not matter: only the time that passes here counts.
    let clock = T0 + 3_600_000;
    const service = fakeService({ difficulty: 32, lifetimeSeconds: 2 });
    const outcome = await run(service, {
      batch: 16,
      now: () => clock,
      onProgress: () => {
        clock += 500;
      },
    });
    assert.deepEqual(outcome, { kind: "too_slow", difficulty: 32, attempts: 64 });
    assert.equal(service.calls.length, 1);
  });
});
