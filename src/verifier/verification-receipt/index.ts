/** Verification receipts (verifier.md §6): issuing them and checking them. */
export {
  DEFAULT_IMPLEMENTATION,
  type IssueOptions,
  issueVerificationReceipt,
  VerificationReceiptIssueError,
  verificationReceiptDigest,
} from "./issue.js";
export {
  type BundleInput,
  bundleDigest,
  type ReceiptCheck,
  type ReceiptCheckCode,
  VERIFICATION_RECEIPT_KIND,
  type VerifyReceiptOptions,
  verifyVerificationReceipt,
} from "./verify.js";
