/** OpenTimestamps anchor verification (verifier.md §8): proof parsing and the verdict. */
export {
  AnchorProofError,
  type AnchorProofErrorCode,
  type Attestation,
  applyOperation,
  type HashAlgorithm,
  MAX_ATTESTATION_PAYLOAD_BYTES,
  MAX_DEPTH,
  MAX_MESSAGE_BYTES,
  MAX_NODES,
  MAX_OP_ARGUMENT_BYTES,
  MAX_PENDING_URI_BYTES,
  MAX_RESULT_BYTES,
  type Operation,
  type ParsedProof,
  type ProofLeaf,
  parseOtsProof,
} from "./ots.js";
export {
  type AnchorCode,
  type AnchorConfirmation,
  type AnchorResult,
  type AnchorStatus,
  type BlockHeaders,
  verifyProof,
} from "./verify-proof.js";
