/** Lease and day-pass tokens: issued after settlement, honoured until expiry, in scope only. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  issuePassToken,
  MAX_PASS_TOKEN_CHARS,
  PassTokenError,
  type PassTokenErrorCode,
  passTokenFromHeaders,
  verifyPassToken,
} from "../../src/payments/pass-token.js";
import { generateSigner, signEd25519 } from "../../src/verifier/crypto/ed25519.js";
import { clock, NOW_MS, PAY_TO } from "./support.js";

const signer = generateSigner();
const TX = `0x${"ab".repeat(32)}`;
const SCOPE = "/erc8004/validate";

function issue(kind: "lease" | "day" = "lease", lifetimeSeconds = 300, now = clock) {
  return issuePassToken(signer, {
    kind,
    scope: SCOPE,
    payer: PAY_TO,
    network: "eip155:8453",
    tx: TX,
    lifetimeSeconds,
    now,
  });
}

function check(token: string, at = NOW_MS, scope = SCOPE, issuers = [signer.did]) {
  return verifyPassToken(token, { issuers, scope, now: () => at });
}

function rejects(code: PassTokenErrorCode, run: () => unknown): void {
  assert.throws(run, (error: unknown) => {
    assert.ok(error instanceof PassTokenError, `expected a PassTokenError, got ${String(error)}`);
    assert.equal(error.code, code);
    return true;
  });
}

function b64u(text: string): string {
  return Buffer.from(text, "utf8").toString("base64url");
}

describe("pass tokens", () => {
  test("a fresh lease verifies and carries what was paid for", () => {
    const { token, claims } = issue();
    assert.match(token, /^pass_[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{86}$/);
    assert.ok(token.length < MAX_PASS_TOKEN_CHARS);
    const expected = {
      issuer: signer.did,
      kind: "lease",
      scope: SCOPE,
      payer: PAY_TO,
      network: "eip155:8453",
      tx: TX,
      issuedAt: NOW_MS / 1000,
      expiresAt: NOW_MS / 1000 + 300,
    };
    assert.deepEqual(claims, expected);
    assert.deepEqual(check(token), expected);
  });

  test("a pass is valid until the second before its expiry, and not from then on", () => {
    const { token } = issue("day", 86_400);
    assert.equal(check(token, NOW_MS + 86_399_999).kind, "day");
    rejects("pass_expired", () => check(token, NOW_MS + 86_400_000));
    const lease = issue().token;
    rejects("pass_expired", () => check(lease, NOW_MS + 301_000));
  });

  test("a pass for another route is refused", () => {
    rejects("pass_scope_mismatch", () => check(issue().token, NOW_MS, "/crystals"));
  });

  test("a tampered payload no longer verifies", () => {
    const { token } = issue();
    const [payload, signature] = token.slice(5).split(".") as [string, string];
    const json = Buffer.from(payload, "base64url").toString("utf8");
    const longer = json.replace('"exp":1767225900', '"exp":1767312000');
    assert.notEqual(longer, json);
    rejects("pass_signature_invalid", () => check(`pass_${b64u(longer)}.${signature}`));
    const asDay = json.replace('"kind":"lease"', '"kind":"day"');
    rejects("pass_signature_invalid", () => check(`pass_${b64u(asDay)}.${signature}`));
  });

  test("a tampered or foreign signature does not verify", () => {
    const { token } = issue();
    const [payload, signature] = token.slice(5).split(".") as [string, string];
    const flipped = `${signature.slice(0, 10)}${signature[10] === "A" ? "B" : "A"}${signature.slice(11)}`;
    rejects("pass_signature_invalid", () => check(`pass_${payload}.${flipped}`));
    // Someone else's key signing a payload that names our issuer.
    const forged = signEd25519(generateSigner(), Buffer.from(`receiptd-pass/1.${payload}`));
    rejects("pass_signature_invalid", () => check(`pass_${payload}.${forged}`));
    // Our key's signature over the bare payload (no domain prefix) is not a pass signature.
    const bare = signEd25519(signer, Buffer.from(payload));
    rejects("pass_signature_invalid", () => check(`pass_${payload}.${bare}`));
  });

  test("a pass from a rotated-out key is refused", () => {
    const { token } = issue();
    rejects("pass_issuer_unknown", () => check(token, NOW_MS, SCOPE, [generateSigner().did]));
  });

  test("a pass issued in the future (beyond clock skew) is refused", () => {
    const { token } = issue("lease", 300, () => NOW_MS + 120_000);
    rejects("pass_not_yet_valid", () => check(token));
    assert.equal(check(issue("lease", 300, () => NOW_MS + 60_000).token).kind, "lease");
  });

  test("malformed tokens", () => {
    const { token } = issue();
    const payload = token.slice(5).split(".")[0]!;
    const malformed = [
      "",
      "svc_0123",
      token.slice(5),
      `${token}.x`,
      "pass_.",
      `pass_${payload}`,
      `pass_${payload}.`,
      `pass_${b64u("not json")}.AAAA`,
      `pass_${b64u('{"v":1}')}.AAAA`,
      `pass_${b64u("[]")}.AAAA`,
      `pass_${payload}.sig+/=`,
      `${token}${"A".repeat(MAX_PASS_TOKEN_CHARS)}`,
    ];
    for (const bad of malformed) rejects("pass_malformed", () => check(bad));
  });

  test("issuing refuses values that would make an unreadable token", () => {
    const base = { kind: "lease" as const, scope: SCOPE, payer: PAY_TO, network: "eip155:8453" };
    assert.throws(() => issuePassToken(signer, { ...base, tx: "0x12", lifetimeSeconds: 300 }));
    assert.throws(() => issuePassToken(signer, { ...base, tx: TX, lifetimeSeconds: 0 }));
    assert.throws(() =>
      issuePassToken(signer, { ...base, scope: "has space", tx: TX, lifetimeSeconds: 300 }),
    );
  });
});

describe("passTokenFromHeaders", () => {
  test("X-Pass-Token, or a Bearer credential starting with pass_", () => {
    assert.equal(passTokenFromHeaders({ "x-pass-token": " pass_abc.def " }), "pass_abc.def");
    assert.equal(passTokenFromHeaders({ authorization: "Bearer pass_abc.def" }), "pass_abc.def");
    assert.equal(passTokenFromHeaders({ authorization: "bearer  pass_abc.def" }), "pass_abc.def");
  });

  test("an API key or nothing is not a pass", () => {
    assert.equal(passTokenFromHeaders({ authorization: `Bearer svc_${"0".repeat(48)}` }), null);
    assert.equal(passTokenFromHeaders({}), null);
  });

  test("a repeated X-Pass-Token is malformed", () => {
    rejects("pass_malformed", () => passTokenFromHeaders({ "x-pass-token": ["a", "b"] }));
  });
});
