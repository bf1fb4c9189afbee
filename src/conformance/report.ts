/**
 * The signed conformance report (service.md §10): the graded members, the time of issue and
 * the issuer, signed like a verification receipt (Ed25519 over the canonical report minus
 * `sig`), so `tools/conformance_submit.py --verify-report` checks it offline.
 */
import { type Ed25519Signer, ed25519Signature } from "../verifier/crypto/ed25519.js";
import { canonicalBytes } from "../verifier/json/canonical.js";
import { fromPlain, type JsonObject } from "../verifier/json/value.js";
import { formatUtcSeconds } from "../verifier/timestamps.js";
import type { GradedSubmission } from "./grade.js";

export function signConformanceReport(
  graded: GradedSubmission,
  signer: Ed25519Signer,
  issuedAt: string = formatUtcSeconds(),
): JsonObject {
  const report = fromPlain({ ...graded, issued_at: issuedAt, issuer: signer.did }) as JsonObject;
  report.set("sig", ed25519Signature(signer, canonicalBytes(report)));
  return report;
}
