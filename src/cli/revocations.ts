/**
 * `receiptd revocations import FILE`: stores a third party's revocation document (service.md
 * §3) in the document store of `DATA_DIR`, where `GET /revocations/{issuer}` serves it.
 *
 * The file must be a valid document whose every statement is well formed and self-signed;
 * anything less changes nothing. Documents are kept one per issuer, so a file holding
 * statements for several keys is split, and each key's statements are merged into what is
 * already stored for it (nothing stored is ever dropped).
 */
import { readFile, stat } from "node:fs/promises";
import type { Env } from "../io/env.js";
import {
  mergeRevocationStatements,
  RevocationStoreError,
  statementsByIssuer,
} from "../revocations/documents.js";
import { ConfigError, loadConfig } from "../service/config.js";
import { openDocumentStore } from "../storage/open.js";
import { codedErrorClass } from "../verifier/coded-error.js";
import {
  MAX_REVOCATION_DOCUMENT_BYTES,
  parseRevocationDocument,
  validateRevocationDocument,
} from "../verifier/revocations/document.js";
import { formatUtcSeconds } from "../verifier/timestamps.js";
import { type CliIo, processIo } from "./entry.js";
import { parseCommand } from "./parse-command.js";

export const USAGE = "usage: receiptd revocations import FILE";

const HELP = `${USAGE}

Validates FILE as a revocation document (kind continuity-receipt-revocations, version 1,
every statement self-signed by the key it revokes) and merges its statements into the
documents served by GET /revocations/{issuer}, one document per revoked key. An invalid
file changes nothing. Acts on the store in DATA_DIR (./data).
Exit codes: 0 stored, 2 usage, I/O or invalid document.
`;

class ImportRefused extends codedErrorClass("import_refused") {}

async function readDocumentFile(file: string): Promise<Buffer> {
  try {
    // The size first: a huge file is refused without being read into memory.
    if ((await stat(file)).size > MAX_REVOCATION_DOCUMENT_BYTES) {
      throw new ImportRefused(
        `${file} is not a usable revocation document: larger than ${MAX_REVOCATION_DOCUMENT_BYTES} bytes`,
      );
    }
    return await readFile(file);
  } catch (error) {
    if (error instanceof ImportRefused) throw error;
    throw new ImportRefused(`cannot read ${file}: ${(error as Error).message}`);
  }
}

export async function main(
  argv: string[],
  io: CliIo = processIo,
  env: Env = process.env,
): Promise<number> {
  const parsed = parseCommand(argv, io, {
    allowPositionals: true,
    usage: USAGE,
    help: HELP,
  });
  if (typeof parsed === "number") return parsed;
  const [action, file, ...extra] = parsed.positionals;
  if (action !== "import" || file === undefined || extra.length > 0) {
    io.stderr(`${USAGE}\n`);
    return 2;
  }
  try {
    const config = loadConfig(env);
    const bytes = await readDocumentFile(file);
    const problems = validateRevocationDocument(bytes, "json");
    if (problems.length > 0) {
      throw new ImportRefused(`${file} is not a usable revocation document: ${problems[0]}`);
    }
    const byIssuer = statementsByIssuer(parseRevocationDocument(bytes));
    if (byIssuer.size === 0) {
      throw new ImportRefused(`${file} holds no statements: nothing to store`);
    }
    const store = await openDocumentStore(config);
    try {
      const outcomes = await mergeRevocationStatements(store, byIssuer, formatUtcSeconds());
      for (const outcome of outcomes) {
        io.stdout(
          `stored ${outcome.issuer}: ${outcome.statements} statement(s), ${outcome.added} new\n`,
        );
      }
    } finally {
      await store.close();
    }
    return 0;
  } catch (error) {
    if (
      error instanceof ImportRefused ||
      error instanceof ConfigError ||
      error instanceof RevocationStoreError
    ) {
      io.stderr(`error: ${error.message}\n`);
      return 2;
    }
    throw error;
  }
}
