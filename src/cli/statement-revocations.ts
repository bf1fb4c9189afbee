/**
 * The revocation documents a statement check (`continuity-receipt-verify-receipt`,
 * `receiptd notarization verify`) is given with `--revocations`. A source that cannot be
 * used makes the statement invalid, not the command line wrong: the CLI reports it as its
 * result, `{valid: false, errors: [<code>]}`, exits 1, and this returns null.
 */
import { loadAndMergeRevocations } from "../io/revocation-sources.js";
import { dumpJson } from "../verifier/json/dump.js";
import type { JsonValue } from "../verifier/json/value.js";
import { RevocationLoadError } from "../verifier/revocations/document.js";
import type { CliIo } from "./entry.js";

export async function statementRevocations(
  sources: readonly string[],
  io: CliIo,
): Promise<JsonValue[] | null> {
  try {
    return await loadAndMergeRevocations(sources);
  } catch (error) {
    if (!(error instanceof RevocationLoadError)) throw error;
    io.stderr(`error: ${error.detail}\n`);
    io.stdout(`${dumpJson({ valid: false, errors: [error.code] }, { indent: 2 })}\n`);
    return null;
  }
}
