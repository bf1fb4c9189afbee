/**
 * Service signing-key rotation (service.md §8): a new key signs from now on, and the old
 * issuer's revocation document gains a statement, signed by the old key, that retires it.
 *
 * Receipts signed before the rotation must stay valid against that document, and a receipt
 * is revoked when `verified_at >= revoked_at` (verifier.md §6.2, §7; whole seconds). So
 * `revoked_at` must lie in a later second than the last receipt the old key can sign. Every
 * holder of the key (`ServiceIdentity`, one per thread and process) stops using a replaced
 * key file within `KEY_REFRESH_MS`, so the order is:
 *
 * 1. keep the old private key in `retired-keys/` (0600), so an interrupted rotation can be
 *    finished later: it is the only key that can sign the retirement statement;
 * 2. atomically replace `service-key.pem` with the new key;
 * 3. wait more than `KEY_REFRESH_MS` plus a whole second;
 * 4. sign the statement with `revoked_at` = now and merge it into the old issuer's document
 *    (compare-and-set);
 * 5. delete the retired private key: once the statement is out it is only a liability.
 *
 * A run that finds keys left in `retired-keys/` finishes their retirement as part of its own.
 */
import { mkdir, readdir, unlink } from "node:fs/promises";
import { dirname, join } from "node:path";
import { mergeRevocationStatements, revocationDocumentProblems } from "../revocations/documents.js";
import {
  createFileOnce,
  readIfPresent,
  replaceFile,
  syncDirectory,
} from "../storage/atomic-file.js";
import type { DocumentStore } from "../storage/document-store.js";
import { codedErrorClass } from "../verifier/coded-error.js";
import type { Ed25519Signer } from "../verifier/crypto/ed25519.js";
import { member } from "../verifier/json/value.js";
import {
  parseRevocationDocument,
  signRevocationStatement,
} from "../verifier/revocations/document.js";
import { verifyStatements } from "../verifier/revocations/statements.js";
import { formatUtcSeconds, timestampMillis } from "../verifier/timestamps.js";
import {
  generateServiceKeyPem,
  KEY_REFRESH_MS,
  serviceKeyPath,
  signerFromPem,
} from "./service-key.js";

export const RETIRED_KEYS_DIR = "retired-keys";

/** The `reason` of the statements a rotation publishes. */
export const ROTATION_REASON = "key rotation";

/** Slack on top of the refresh interval, for a holder caught in the middle of its check. */
const SWITCH_SLACK_MS = 250;

export type KeyRotationErrorCode = "key_rotation_refused";
export class KeyRotationError extends codedErrorClass<KeyRotationErrorCode>(
  "key_rotation_refused",
) {
  override readonly name = "KeyRotationError";
}

export interface RotationOptions {
  /** Milliseconds since the epoch; `revoked_at` and `issued_at` are read from it. */
  now?: () => number;
  /** Waits `ms` of `now`'s time; tests pass one that advances a fake clock. */
  sleep?: (ms: number) => Promise<void>;
}

export interface Retirement {
  issuer: string;
  /** `revoked_at` of the retirement statement in the issuer's document. */
  revokedAt: string;
  /** False when the document already held a retirement by this key (a resumed run). */
  published: boolean;
}

export interface RotationResult {
  /** Keys an interrupted earlier rotation left behind, now retired. */
  resumed: Retirement[];
  /** The key this rotation replaced. */
  retired: Retirement;
  /** The issuer that signs from now on (named by `/info`). */
  issuer: string;
}

function retiredKeysDir(dataDir: string): string {
  return join(dataDir, RETIRED_KEYS_DIR);
}

/** `did:key:z…` → `z….pem`: one file per key, so keeping a key twice is harmless. */
function retiredKeyPath(dataDir: string, did: string): string {
  return join(retiredKeysDir(dataDir), `${did.slice("did:key:".length)}.pem`);
}

interface RetiredKey {
  signer: Ed25519Signer;
  /** Where the private key is kept until its retirement is published. */
  path: string;
}

/** Keys an earlier run kept but did not get to retire. */
async function leftoverRetiredKeys(dataDir: string): Promise<RetiredKey[]> {
  let names: string[];
  try {
    names = await readdir(retiredKeysDir(dataDir));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw error;
  }
  const keys: RetiredKey[] = [];
  for (const name of names.filter((entry) => entry.endsWith(".pem")).sort()) {
    const path = join(retiredKeysDir(dataDir), name);
    const pem = await readIfPresent(path);
    if (pem !== null) keys.push({ signer: signerFromPem(pem.toString("utf8"), path), path });
  }
  return keys;
}

/**
 * The `revoked_at` of a valid statement in `issuer`'s stored document that already retires
 * the key by `revokedAt` (a rotation interrupted after publishing), or null.
 */
async function earlierRetirement(
  store: DocumentStore,
  issuer: string,
  revokedAt: string,
): Promise<string | null> {
  const bytes = await store.get("revocations", issuer);
  if (bytes === null || revocationDocumentProblems(bytes, issuer).length > 0) return null;
  const deadline = timestampMillis(revokedAt);
  const earlier = verifyStatements(parseRevocationDocument(bytes)).revoked.find(
    (revocation) => revocation.key === issuer && revocation.revokedAt <= deadline,
  );
  return earlier === undefined ? null : String(member(earlier.statement, "revoked_at"));
}

async function retire(
  store: DocumentStore,
  { signer, path }: RetiredKey,
  revokedAt: string,
): Promise<Retirement> {
  const issuer = signer.did;
  const earlier = await earlierRetirement(store, issuer, revokedAt);
  if (earlier === null) {
    const statement = signRevocationStatement(signer, { revokedAt, reason: ROTATION_REASON });
    await mergeRevocationStatements(store, new Map([[issuer, [statement]]]), revokedAt);
  }
  await unlink(path);
  await syncDirectory(dirname(path));
  return { issuer, revokedAt: earlier ?? revokedAt, published: earlier === null };
}

/**
 * Rotates the signing key of `dataDir`, publishing the old issuer's retirement into `store`.
 * Holds the process for a little over `KEY_REFRESH_MS` + 1 s. Throws `KeyRotationError` when
 * there is no key to rotate, `ServiceKeyError` for a key file that is not an
 * Ed25519 key, `RevocationStoreError` when the old issuer's document cannot take the statement
 * (the retired key is then kept, and the next run finishes the job).
 */
export async function rotateServiceKey(
  dataDir: string,
  store: DocumentStore,
  options: RotationOptions = {},
): Promise<RotationResult> {
  const now = options.now ?? Date.now;
  const sleep =
    options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const keyPath = serviceKeyPath(dataDir);
  const currentPem = await readIfPresent(keyPath);
  if (currentPem === null) {
    throw new KeyRotationError(`no service key at ${keyPath}: nothing to rotate`);
  }
  const signer = signerFromPem(currentPem.toString("utf8"), keyPath);
  const current: RetiredKey = { signer, path: retiredKeyPath(dataDir, signer.did) };

  // A leftover copy of the current key means a rotation stopped before switching: this run
  // performs that switch, so the key is retired once, not twice.
  const leftovers = (await leftoverRetiredKeys(dataDir)).filter(
    (key) => key.signer.did !== signer.did,
  );

  await mkdir(retiredKeysDir(dataDir), { recursive: true, mode: 0o700 });
  await createFileOnce(current.path, currentPem, 0o600);
  const newPem = generateServiceKeyPem();
  const issuer = signerFromPem(newPem, keyPath).did;
  await replaceFile(keyPath, newPem, 0o600);

  // Leftover keys were switched away from before this run started, so the same wait covers
  // them: after it no holder signs with any retired key, and the last receipt one of them
  // signed is dated (whole seconds) before `revoked_at`.
  const switchedAt = now();
  const settled = switchedAt + KEY_REFRESH_MS + 1000 + SWITCH_SLACK_MS;
  for (let left = settled - now(); left > 0; left = settled - now()) await sleep(left);
  const revokedAt = formatUtcSeconds(new Date(now()));

  const resumed: Retirement[] = [];
  for (const key of leftovers) resumed.push(await retire(store, key, revokedAt));
  const retired = await retire(store, current, revokedAt);
  return { resumed, retired, issuer };
}
