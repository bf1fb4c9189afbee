/**
 * The package version, written into the `verifier` member of verification receipts.
 * It is a constant rather than a read of package.json because the verifier library does no
 * I/O; a test keeps the two equal.
 */
export const VERIFIER_VERSION = "0.1.0";
