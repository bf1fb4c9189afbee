/**
 * The `get_revocations` tool's second half, on the main thread: reading the store is I/O.
 * The worker has already checked the arguments. A found document goes into the response as
 * its stored bytes (they were validated as a strict JSON document before being vouched for),
 * so the main thread never parses it and the client gets what `GET /revocations/{issuer}`
 * serves, byte for byte.
 */

import {
  type RevocationDocumentCheck,
  readRevocationDocument,
} from "../../../revocations/documents.js";
import type { DocumentStore } from "../../../storage/document-store.js";
import { dumpCompact } from "../../../verifier/json/dump.js";
import type { ErrorCode } from "../../errors.js";
import type { RevocationsLookup } from "./answer.js";
import { resultResponse, toolResult } from "./json-rpc.js";
import type { VerifiedPart } from "./verify-bundle.js";

/** The tool's failures carry the error bodies of `GET /revocations/{issuer}`. */
const FAILURES = {
  not_found: { error: "no_document" },
  invalid: { error: "stored_document_invalid" },
} as const satisfies Record<string, { error: ErrorCode }>;

/**
 * The JSON-RPC response to a `get_revocations` call. A found document is charged, as
 * `GET /revocations/{issuer}`'s 200; its 404 and 500 are not.
 */
export async function answerGetRevocations(
  store: DocumentStore,
  check: RevocationDocumentCheck,
  lookup: RevocationsLookup,
): Promise<VerifiedPart> {
  const found = await readRevocationDocument(store, lookup.issuer, check);
  if (found.status === "found") {
    const result = toolResult(new TextDecoder().decode(found.bytes), false);
    return { json: resultResponse(lookup.id, result), workDone: true };
  }
  return { json: resultResponse(lookup.id, toolResult(dumpCompact(FAILURES[found.status]), true)) };
}
