/**
 * Context notarization (issue 28): the request rules, the signed `wm.context-notarization`
 * statement, its stored document and its offline check. No HTTP here: the route calls
 * `parseNotarizationRequest`, `issueNotarization`, `storeNotarization`, `notarizationAnswer`
 * and `readNotarization`, and maps `NotarizationError.code` to its status.
 */
export { NotarizationError, type NotarizationErrorCode } from "./errors.js";
export {
  characterCount,
  MAX_ACTION_CHARS,
  MAX_AGENT_ID_CHARS,
  MAX_METADATA_ENTRIES,
  MAX_METADATA_KEY_CHARS,
  MAX_METADATA_VALUE_CHARS,
  MAX_MODEL_CHARS,
  type MetadataValue,
  type NotarizationRequest,
  normalizeDigest,
  parseNotarizationRequest,
  REQUEST_FIELDS,
} from "./request.js";
export {
  digestHex,
  type IssuedNotarization,
  type IssueNotarizationOptions,
  issueNotarization,
  NOTARIZATION_KIND,
  NOTARIZATION_NOTE,
  NOTARIZATION_SPEC,
  NOTARIZATION_VERSION,
  type NotarizationAnswer,
  notarizationAnswer,
  notarizationDocument,
} from "./statement.js";
export { NOTARIZATIONS, notarizationId, readNotarization, storeNotarization } from "./store.js";
export {
  type NotarizationCheck,
  type NotarizationCheckCode,
  type VerifyNotarizationOptions,
  verifyNotarization,
} from "./verify.js";
