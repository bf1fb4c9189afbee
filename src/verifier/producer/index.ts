/**
 * The producer API: pure helpers to issue receipts and assemble bundles that the verifier
 * accepts, or that break one rule on purpose (the rule tests build their bundles with it).
 */

// Revocation statements are produced next to the code that reads them.
export {
  type RevocationClaim,
  signRevocationStatement,
} from "../revocations/document.js";
export { attestDelivery } from "./attest.js";
export {
  anchorEntry,
  BundleBuilder,
  type BundleExtras,
  type BundleRecord,
  chainHeadFor,
} from "./bundle-builder.js";
export {
  type JsonInput,
  type ReceiptFields,
  receiptEnvelope,
  signReceipt,
  toJson,
} from "./receipt.js";
export { type RedactOptions, redact, type SignerResolver, signersByDid } from "./redact.js";
