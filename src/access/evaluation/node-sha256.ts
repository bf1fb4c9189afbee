/**
 * The server's SHA-256 for the proof of work: OpenSSL through `node:crypto`, behind the
 * `Sha256` signature of the browser-safe `proof-of-work.ts` (which must not import it).
 */
import { createHash } from "node:crypto";
import type { Sha256 } from "../../portable/proof-of-work.js";

export const nodeSha256: Sha256 = (data) => createHash("sha256").update(data).digest();
