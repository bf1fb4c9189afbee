/**
 * The `notarize` tool's second half, on the main thread: storing the statement the worker
 * signed is I/O. The store is `POST /notarize`'s (collection `notarizations`, keyed by the
 * statement's digest, idempotent by content). A store that cannot be reached is the tool
 * error `store_unavailable`, the code `POST /notarize` answers with 503: nothing was stored,
 * and a retry signs a new statement. Like the 503, that error is not charged; a stored
 * statement is.
 */
import { storeNotarization } from "../../../notarization/index.js";
import {
  type DocumentStore,
  DocumentStoreUnavailableError,
} from "../../../storage/document-store.js";
import { dumpCompact } from "../../../verifier/json/dump.js";
import type { ErrorCode } from "../../errors.js";
import { SERVICE_NAME } from "../../service-name.js";
import type { NotarizationStorage } from "./answer.js";
import { resultResponse, toolResult } from "./json-rpc.js";
import type { VerifiedPart } from "./verify-bundle.js";

const STORE_UNAVAILABLE = {
  error: "store_unavailable",
  detail: "the notarization store cannot be written right now, retry",
} as const satisfies { error: ErrorCode; detail: string };

/** The JSON-RPC response to a `notarize` call. */
export async function answerNotarize(
  store: DocumentStore,
  storage: NotarizationStorage,
): Promise<VerifiedPart> {
  try {
    await storeNotarization(store, storage.issued, SERVICE_NAME);
  } catch (error) {
    if (!(error instanceof DocumentStoreUnavailableError)) throw error;
    return { json: resultResponse(storage.id, toolResult(dumpCompact(STORE_UNAVAILABLE), true)) };
  }
  return { json: resultResponse(storage.id, storage.result), workDone: true };
}
