/**
 * `POST /verify-receipt` from raw body bytes to response text (service.md §1). It runs on a
 * worker thread (`worker.ts`); the checks are the library's
 * `verifyVerificationReceipt` (verifier.md §6.2), fed the way the CLI feeds them.
 *
 * Decisions where service.md is silent:
 * - the two body forms are told apart by `kind`, which every receipt has: an object with a
 *   `receipt` member and no `kind` member is the wrapped form, anything else is the receipt
 *   itself (so a body that is not an object is answered `200` with `not_an_object`, a
 *   verification failure like any other);
 * - the wrapper's members are checked: an unknown member (a misspelt `revocations`, say) is
 *   `400 bad_shape` instead of a check silently not run; `bundle` must be an object;
 * - `revocations` is a list of statements (as the reference takes it), one revocation document
 *   (what `GET /revocations/{issuer}` serves, what the CLI's `--revocations` reads), or a list
 *   of documents. Documents are told from statements by their `kind`, read with the CLI's
 *   loader checks (a document failing them is `400 bad_revocations_document`) and merged as
 *   the CLI merges its sources, so the answer is the one the CLI gives for the same
 *   documents. A list mixing both is `400 bad_shape`. URLs are not fetched: the client
 *   inlines the document;
 * - `bundle` and `bundle_bytes_b64` together → `400 ambiguous_bundle`;
 * - `bundle_bytes_b64` is strict RFC 4648 §4 base64 (padded, no line breaks or whitespace,
 *   zero pad bits), and the bytes must be strict UTF-8 JSON holding an object; anything else is
 *   `400 bad_bundle_bytes`. The reference's CLI passes bytes to `json.loads`, which would also
 *   take a BOM or UTF-16: refused here, as everywhere in this service.
 */

import { bodyValidator } from "../../../validation/body-validator.js";
import { parseJson, StrictJsonError } from "../../../verifier/json/parse.js";
import { isObject, type JsonObject, type JsonValue } from "../../../verifier/json/value.js";
import {
  isRevocationDocument,
  RevocationLoadError,
  revocationDocumentStatements,
} from "../../../verifier/revocations/document.js";
import { mergeStatements } from "../../../verifier/revocations/statements.js";
import {
  type VerifyReceiptOptions,
  verifyVerificationReceipt,
} from "../../../verifier/verification-receipt/index.js";
import {
  type Answer,
  answer,
  answerOrRefusal,
  parseRequestJson,
  ServiceError,
} from "../../errors.js";
import { SERVICE_NAME } from "../../service-name.js";
import { receiptRequestSchema } from "./contract.js";

export interface VerifyReceiptTask {
  /** The raw request body, moved (not copied) to the worker. */
  body: ArrayBuffer;
}

const validateReceiptRequest = bodyValidator(receiptRequestSchema);

const STANDARD_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Strict base64: the bytes, or null. Re-encoding catches non-zero pad bits, a second spelling. */
export function decodeStrictBase64(text: string): Buffer | null {
  if (!STANDARD_BASE64.test(text)) return null;
  const bytes = Buffer.from(text, "base64");
  return bytes.toString("base64") === text ? bytes : null;
}

function bundleFromBase64(text: string): JsonObject {
  const bytes = decodeStrictBase64(text);
  if (bytes === null) {
    throw new ServiceError("bad_bundle_bytes", {
      detail: "bundle_bytes_b64 is not standard base64 (RFC 4648 §4, padded, no whitespace)",
    });
  }
  let bundle: JsonValue;
  try {
    bundle = parseJson(bytes);
  } catch (error) {
    if (!(error instanceof StrictJsonError)) throw error;
    throw new ServiceError("bad_bundle_bytes", {
      detail: `bundle bytes are not valid JSON: ${error.message}`,
    });
  }
  if (!isObject(bundle)) {
    throw new ServiceError("bad_bundle_bytes", {
      detail: "bundle bytes do not hold a JSON object",
    });
  }
  return bundle;
}

/** The statements of `documents`, merged as the CLI merges its `--revocations` sources. */
function documentsStatements(documents: readonly JsonValue[], where: (index: number) => string) {
  return mergeStatements(
    ...documents.map((document, index) => {
      try {
        return revocationDocumentStatements(document);
      } catch (error) {
        if (!(error instanceof RevocationLoadError)) throw error;
        throw new ServiceError("bad_revocations_document", {
          detail: `${where(index)}: ${error.detail}`,
        });
      }
    }),
  );
}

/** The statements `revocations` stands for: see the decisions at the top. */
function revocationStatements(revocations: JsonValue | undefined): JsonValue[] | undefined {
  if (isObject(revocations)) return documentsStatements([revocations], () => "revocations");
  if (!Array.isArray(revocations)) return undefined;
  const documents = revocations.filter(isRevocationDocument).length;
  if (documents === 0) return revocations;
  if (documents < revocations.length) {
    throw new ServiceError("bad_shape", {
      detail:
        "revocations must be a list of statements or a list of revocation documents, not both",
    });
  }
  return documentsStatements(revocations, (index) => `revocations[${index}]`);
}

interface ReceiptRequest {
  receipt: JsonValue;
  options: VerifyReceiptOptions;
}

function receiptRequest(body: JsonValue): ReceiptRequest {
  if (!isObject(body) || !body.has("receipt") || body.has("kind")) {
    return { receipt: body, options: {} };
  }
  const problem = validateReceiptRequest(body);
  if (problem !== null) throw new ServiceError("bad_shape", { detail: problem });
  const bundle = body.get("bundle");
  const bundleBytes = body.get("bundle_bytes_b64");
  if (bundle !== undefined && bundleBytes !== undefined) {
    throw new ServiceError("ambiguous_bundle", {
      detail: "give bundle or bundle_bytes_b64, not both",
    });
  }
  return {
    receipt: body.get("receipt") ?? null,
    options: {
      bundle: typeof bundleBytes === "string" ? bundleFromBase64(bundleBytes) : bundle,
      revocations: revocationStatements(body.get("revocations")),
    },
  };
}

export function answerVerifyReceiptRequest(bytes: Uint8Array): Answer {
  return answerOrRefusal(() => {
    const request = receiptRequest(parseRequestJson(bytes));
    const check = verifyVerificationReceipt(request.receipt, request.options);
    return answer(200, { ...check, service: SERVICE_NAME });
  });
}
