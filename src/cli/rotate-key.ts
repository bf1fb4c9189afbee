/**
 * `receiptd rotate-key`: replaces the service signing key of `DATA_DIR` and publishes the old
 * issuer's retirement (service.md §8; the steps and their order are in
 * src/service/key-rotation.ts). Safe while servers run on the same data directory: they
 * switch to the new key by themselves.
 */
import type { Env } from "../io/env.js";
import { RevocationStoreError } from "../revocations/documents.js";
import { ConfigError, loadConfig } from "../service/config.js";
import { KeyRotationError, rotateServiceKey } from "../service/key-rotation.js";
import { KEY_REFRESH_MS, ServiceKeyError } from "../service/service-key.js";
import { openDocumentStore } from "../storage/open.js";
import { type CliIo, processIo } from "./entry.js";
import { parseCommand } from "./parse-command.js";

export const USAGE = "usage: receiptd rotate-key";

const HELP = `${USAGE}

Generates a new Ed25519 service key in DATA_DIR (./data), switches to it, and publishes a
revocation statement for the old issuer, signed by the old key, in the old issuer's document
(GET /revocations/{old issuer}). Receipts signed before the rotation stay valid. Running
servers switch by themselves; the command waits for them (a little over ${KEY_REFRESH_MS} ms + 1 s)
before dating the revocation. A rotation that was interrupted is finished first.
Exit codes: 0 rotated, 2 usage or failure.
`;

export async function main(
  argv: string[],
  io: CliIo = processIo,
  env: Env = process.env,
): Promise<number> {
  const parsed = parseCommand(argv, io, { usage: USAGE, help: HELP });
  if (typeof parsed === "number") return parsed;
  try {
    const config = loadConfig(env);
    const dataDir = config.dataDir;
    const store = await openDocumentStore(config);
    try {
      const result = await rotateServiceKey(dataDir, store);
      for (const retirement of result.resumed) {
        io.stdout(
          `finished an interrupted rotation: ${retirement.issuer} revoked at ${retirement.revokedAt}\n`,
        );
      }
      io.stdout(`old issuer: ${result.retired.issuer} (revoked at ${result.retired.revokedAt})\n`);
      io.stdout(`new issuer: ${result.issuer}\n`);
    } finally {
      await store.close();
    }
    return 0;
  } catch (error) {
    if (
      error instanceof ConfigError ||
      error instanceof KeyRotationError ||
      error instanceof ServiceKeyError ||
      error instanceof RevocationStoreError
    ) {
      io.stderr(`error: ${error.message}\n`);
      return 2;
    }
    throw error;
  }
}
