/** receiptd's verifier: a pure library (no I/O) for Continuity Receipt 0.1–0.6. */

export { type AnchorResult, verifyProof } from "./anchor/index.js";
export { ResultBudget, ResultBudgetExceeded } from "./bundle/budget.js";
export { SUPPORTED_SPECS } from "./bundle/record-types.js";
export {
  type BundleErrorCode,
  VERDICTS,
  type Verdict,
  type VerificationError,
  type VerifyResult,
} from "./bundle/result.js";
export { type VerifyOptions, verifyBundle } from "./bundle/verify-bundle.js";
export { MAX_BUNDLE_BYTES, verifyBundleBytes } from "./bundle/verify-document.js";
export { didKeyToPublicKey, publicKeyToDidKey } from "./crypto/did-key.js";
export { recordDigest, sha256Digest, valueDigest } from "./crypto/digest.js";
export {
  type Ed25519Signer,
  generateSigner,
  signEd25519,
  signerFromPrivateKey,
  signerFromSeed,
  verifyEd25519,
} from "./crypto/ed25519.js";
export { CanonicalizationError, canonicalBytes, canonicalText } from "./json/canonical.js";
export { dumpCompact, dumpJson } from "./json/dump.js";
export { PARSER_MAX_DEPTH, type ParseOptions, parseJson, StrictJsonError } from "./json/parse.js";
export {
  fromPlain,
  type JsonObject,
  type JsonValue,
  jsonObject,
  PyFloat,
  toPlain,
} from "./json/value.js";
export * from "./producer/index.js";
export {
  buildRevocationDocument,
  isRevocationDocument,
  parseRevocationDocument,
  RevocationLoadError,
  revocationDocumentStatements,
  signRevocationStatement,
  validateRevocationDocument,
} from "./revocations/document.js";
export { mergeStatements, verifyStatements } from "./revocations/statements.js";
export {
  issueVerificationReceipt,
  type ReceiptCheck,
  verificationReceiptDigest,
  verifyVerificationReceipt,
} from "./verification-receipt/index.js";
export { VERIFIER_VERSION } from "./version.js";
