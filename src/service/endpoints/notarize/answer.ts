/**
 * Worker-side handling of `POST /notarize` (docs/notarization.md): the strict parse, the
 * request rules and the signature run on a CPU-pool thread; the main thread only stores the
 * document this prepares and sends the answer text. A refusal of the library is answered here,
 * with its code and `fields`/`field`, because errors do not cross the thread boundary.
 */
import {
  type IssuedNotarization,
  issueNotarization,
  NotarizationError,
  notarizationAnswer,
  notarizationDocument,
  parseNotarizationRequest,
} from "../../../notarization/index.js";
import type { Ed25519Signer } from "../../../verifier/crypto/ed25519.js";
import { dumpCompact } from "../../../verifier/json/dump.js";
import { type Answer, answerOrRefusal, errorAnswer, parseRequestJson } from "../../errors.js";
import { LIBRARY_ERROR_CODES } from "../../library-errors.js";

export interface NotarizeTask {
  /** The raw request body, moved (not copied) to the worker. */
  body: ArrayBuffer;
  /** The service name the answer and the stored document carry. */
  service: string;
  /** The app's clock (ms), so `issued_at` and `stored_at` follow it, not the thread's. */
  now: number;
}

/** A signed statement, ready for the main thread to store and answer. */
export interface PreparedNotarization {
  kind: "notarized";
  /** `sha256:<hex>`: the document id in the `notarizations` collection. */
  digest: string;
  /** The stored document's bytes (`notarizationDocument`). */
  document: Uint8Array;
  /** `POST /notarize`'s 200 body, as text. */
  answer: string;
}

/** `POST /notarize` from raw body bytes: a refusal to send, or the statement to store. */
export function prepareNotarization(
  bytes: Uint8Array,
  service: string,
  signer: Ed25519Signer,
  now: Date = new Date(),
): Answer | PreparedNotarization {
  return answerOrRefusal(() => {
    const body = parseRequestJson(bytes);
    let issued: IssuedNotarization;
    try {
      issued = issueNotarization(parseNotarizationRequest(body), signer, { now: () => now });
    } catch (error) {
      if (error instanceof NotarizationError) return refusalOf(error);
      throw error;
    }
    return {
      kind: "notarized",
      digest: issued.digest,
      document: notarizationDocument(issued, service, now),
      answer: dumpCompact(notarizationAnswer(issued, service)),
    };
  });
}

function refusalOf(error: NotarizationError): Answer {
  const fields = {
    detail: error.detail,
    ...(error.fields === undefined ? {} : { fields: error.fields }),
    ...(error.field === undefined ? {} : { field: error.field }),
  };
  return errorAnswer(LIBRARY_ERROR_CODES[error.code], fields);
}
