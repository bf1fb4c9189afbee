/** The x402 payments library: requirements, wire codec, local EIP-3009 checks, nonce ledger,
 * facilitator client, pass tokens. The facilitator peer is a dev/test tool, not exported here. */
export * from "./codec.js";
export * from "./eip3009.js";
export * from "./errors.js";
export * from "./facilitator-client.js";
export * from "./formats.js";
export * from "./nonce-ledger.js";
export * from "./pass-token.js";
export * from "./requirements.js";
