/**
 * Step C6: the body vocabulary that 0.5/0.6 receipts must use (verifier.md §3.3),
 * and the 0.6 `authority.grant` rules. Each violation is one `malformed` detail.
 */

import { SHA256_DIGEST } from "../../crypto/digest.js";
import { isObject, type JsonObject, type JsonValue, member } from "../../json/value.js";
import { isValidTimestamp, timestampMillis } from "../../timestamps.js";
import { isAuthoritySpec, isVocabularySpec } from "../record-types.js";

const MANDALA_CLASSES = new Set<unknown>(["gate-lite", "gate-hard", "local"]);
const SANDBOX_CLASSES = new Set<unknown>([
  "bwrap",
  "landlock",
  "bwrap-landlock",
  "microvm-ch",
  "microvm-fc",
  "none",
]);
const RUNNER_PROFILE_KEYS = ["executable_digest", "invocation_digest", "profile_id"];
const MERKLE_DIGEST = /^merkle-sha256:[0-9a-f]{64}$/;
const MAX_SAFE_COUNT = 2n ** 53n - 1n;
const ASSURANCES = new Set<unknown>(["self_asserted", "issuer_verified"]);
const REVIEW_POLICIES = new Set<unknown>(["none", "flagged", "full"]);

const isNonEmptyString = (value: JsonValue): value is string =>
  typeof value === "string" && value.length > 0;
const isSha256Digest = (value: JsonValue): boolean =>
  typeof value === "string" && SHA256_DIGEST.test(value);

function runnerProfileProblem(body: JsonObject): string | null {
  const sandbox = member(body, "sandbox_class");
  if (sandbox === "bwrap" && !body.has("runner_profile")) {
    return "bwrap execution requires runner_profile";
  }
  if (!body.has("runner_profile")) return null;
  const profile = member(body, "runner_profile");
  const valid =
    isObject(profile) &&
    profile.size === RUNNER_PROFILE_KEYS.length &&
    RUNNER_PROFILE_KEYS.every((key) => profile.has(key)) &&
    isNonEmptyString(member(profile, "profile_id")) &&
    isSha256Digest(member(profile, "executable_digest")) &&
    isSha256Digest(member(profile, "invocation_digest"));
  return valid
    ? null
    : "runner_profile must contain a nonempty profile_id and sha256 executable_digest and invocation_digest";
}

function stateCommitmentProblems(body: JsonObject): string[] {
  const problems: string[] = [];
  if (!isNonEmptyString(member(body, "state_kind")))
    problems.push("state_kind must be nonempty text");
  if (!isNonEmptyString(member(body, "scope"))) problems.push("scope must be nonempty text");
  const count = member(body, "count");
  const countValid =
    (typeof count === "number" && count >= 0) ||
    (typeof count === "bigint" && count >= 0n && count <= MAX_SAFE_COUNT);
  if (!countValid) problems.push("count must be an exact JSON integer from 0 through 2^53-1");
  if (!isSha256Digest(member(body, "head_digest"))) {
    problems.push("head_digest must be a sha256 digest");
  }
  const merkleRoot = member(body, "merkle_root");
  if (merkleRoot !== null && !(typeof merkleRoot === "string" && MERKLE_DIGEST.test(merkleRoot))) {
    problems.push("merkle_root must be a merkle-sha256 digest");
  }
  return problems;
}

function authorityGrantProblems(body: JsonObject): string[] {
  const problems: string[] = [];
  if (!isNonEmptyString(member(body, "grant_id"))) problems.push("grant_id must be nonempty text");
  const principal = member(body, "principal");
  if (
    !isObject(principal) ||
    !isNonEmptyString(member(principal, "id")) ||
    !ASSURANCES.has(member(principal, "assurance"))
  ) {
    problems.push("principal must name an id and an assurance of self_asserted or issuer_verified");
  }
  if (!isNonEmptyString(member(body, "agent"))) problems.push("agent must be nonempty text");
  const scope = member(body, "scope");
  if (!Array.isArray(scope) || scope.length === 0 || !scope.every(isNonEmptyString)) {
    problems.push("scope must be a nonempty list of nonempty strings");
  }
  const grantedAt = member(body, "granted_at");
  const grantedValid = isValidTimestamp(grantedAt);
  if (!grantedValid) problems.push("granted_at must be RFC 3339 UTC");
  const expiresAt = member(body, "expires_at");
  if (expiresAt !== null) {
    if (!isValidTimestamp(expiresAt)) problems.push("expires_at must be RFC 3339 UTC");
    else if (grantedValid && timestampMillis(expiresAt) <= timestampMillis(grantedAt)) {
      problems.push("expires_at must be later than granted_at");
    }
  }
  const reviewPolicy = member(body, "review_policy");
  if (reviewPolicy !== null && !REVIEW_POLICIES.has(reviewPolicy)) {
    problems.push("review_policy must be none, flagged, or full");
  }
  const constraints = member(body, "constraints");
  if (constraints !== null && !isObject(constraints))
    problems.push("constraints must be an object");
  const policyRef = member(body, "policy_ref");
  if (policyRef !== null && !isSha256Digest(policyRef)) {
    problems.push("policy_ref must be a sha256 digest");
  }
  const gateRef = member(body, "gate_ref");
  if (gateRef !== null && !isNonEmptyString(gateRef))
    problems.push("gate_ref must be nonempty text");
  return problems;
}

/** The `malformed` details for one receipt's body under its own spec. */
export function bodyVocabularyProblems(type: string, spec: JsonValue, body: JsonObject): string[] {
  const problems: string[] = [];
  if (isVocabularySpec(spec)) {
    if (type === "session.pass.created" && !MANDALA_CLASSES.has(member(body, "mandala_class"))) {
      problems.push("mandala_class must be gate-lite, gate-hard, or local");
    }
    if (type === "task.execution") {
      if (!SANDBOX_CLASSES.has(member(body, "sandbox_class"))) {
        problems.push("sandbox_class is unknown");
      }
      const profileProblem = runnerProfileProblem(body);
      if (profileProblem) problems.push(profileProblem);
    }
    if (type === "state.commitment") problems.push(...stateCommitmentProblems(body));
  }
  if (isAuthoritySpec(spec) && type === "authority.grant") {
    problems.push(...authorityGrantProblems(body));
  }
  return problems;
}
