/**
 * The signed conformance report (service.md §10): the graded members, the time of issue and
 * the issuer, signed like a verification receipt (Ed25519 over the canonical report minus
 * `sig`), so `tools/conformance_submit.py --verify-report` checks it offline.
 */
import {
  canDecodeDidKey,
  type Ed25519Signer,
  ed25519Signature,
  verifyEd25519,
} from "../verifier/crypto/ed25519.js";
import { CanonicalizationError, canonicalBytes } from "../verifier/json/canonical.js";
import { fromPlain, isObject, type JsonObject, type JsonValue } from "../verifier/json/value.js";
import { formatUtcSeconds } from "../verifier/timestamps.js";
import {
  CONFORMANCE_REPORT_KIND,
  CONFORMANCE_REPORT_VERSION,
  CONFORMANCE_VERDICTS,
  type GradedSubmission,
} from "./grade.js";

export function signConformanceReport(
  graded: GradedSubmission,
  signer: Ed25519Signer,
  issuedAt: string = formatUtcSeconds(),
): JsonObject {
  const report = fromPlain({ ...graded, issued_at: issuedAt, issuer: signer.did }) as JsonObject;
  report.set("sig", ed25519Signature(signer, canonicalBytes(report)));
  return report;
}

/**
 * Everything that keeps `report` from being a genuine conformance report, as
 * `tools/conformance_submit.py --verify-report` checks it offline: kind, version, a known
 * verdict, `sig.key` equal to `issuer`, and Ed25519 over the canonical report minus `sig`
 * under that did:key. Empty when it verifies. Whether the issuer is the referee one trusts
 * is for the caller to check.
 */
export function conformanceReportProblems(report: JsonValue): string[] {
  if (!isObject(report)) return ["the report is not a JSON object"];
  const problems: string[] = [];
  if (report.get("kind") !== CONFORMANCE_REPORT_KIND) {
    problems.push(`kind is not ${CONFORMANCE_REPORT_KIND}`);
  }
  if (report.get("version") !== CONFORMANCE_REPORT_VERSION) {
    problems.push(`version is not ${CONFORMANCE_REPORT_VERSION}`);
  }
  if (!CONFORMANCE_VERDICTS.some((verdict) => verdict === report.get("verdict"))) {
    problems.push(`verdict is not one of ${CONFORMANCE_VERDICTS.join(", ")}`);
  }
  const issuer = report.get("issuer");
  const sig = report.get("sig");
  if (typeof issuer !== "string" || !canDecodeDidKey(issuer)) {
    problems.push("issuer is not an Ed25519 did:key");
  } else if (!isObject(sig) || sig.get("alg") !== "ed25519") {
    problems.push("sig is not an ed25519 signature");
  } else if (sig.get("key") !== issuer) {
    problems.push("sig.key is not the issuer");
  } else {
    const value = sig.get("value");
    let signed: Uint8Array | null = null;
    try {
      signed = canonicalBytes(report, "sig");
    } catch (error) {
      if (!(error instanceof CanonicalizationError)) throw error;
      problems.push(`the report has no canonical form: ${error.message}`);
    }
    if (signed !== null && (typeof value !== "string" || !verifyEd25519(issuer, signed, value))) {
      problems.push("the signature does not verify under the issuer's key");
    }
  }
  return problems;
}
