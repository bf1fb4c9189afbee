/**
 * Revocation documents as the service keeps them (service.md §3, verifier.md §7): one
 * document per issuer in the "revocations" collection, under the issuer's did:key, holding
 * only that issuer's self-signed statements. Documents arrive through operator commands
 * (`receiptd revocations import`, `receiptd rotate-key`) and are served by
 * `GET /revocations/{issuer}` and the MCP tool `get_revocations`.
 *
 * The service never serves a document it cannot vouch for, so stored bytes are validated
 * before every use. Validation is Ed25519 work, so a validated (issuer, bytes) pair is
 * remembered by the bytes' SHA-256: a hot document is verified once, not per request, and a
 * replaced document (new bytes, new digest) is verified again.
 *
 * Domain code, not the endpoint's: the CLIs and key rotation write documents without a
 * server, so it lives outside src/service (the endpoint adds only validation on its pool,
 * `revocationDocumentCheckOn` in endpoints/revocations/contract.ts).
 */

import { createHash } from "node:crypto";
import type { CollectionName, DocumentStore } from "../storage/document-store.js";
import { codedErrorClass } from "../verifier/coded-error.js";
import { canDecodeDidKey } from "../verifier/crypto/ed25519.js";
import { dumpCompact } from "../verifier/json/dump.js";
import { isObject, type JsonValue, member } from "../verifier/json/value.js";
import {
  buildRevocationDocument,
  MAX_REVOCATION_DOCUMENT_BYTES,
  parseRevocationDocument,
  validateRevocationDocument,
} from "../verifier/revocations/document.js";
import { mergeStatements } from "../verifier/revocations/statements.js";

const COLLECTION: CollectionName = "revocations";

export type RevocationDocumentRead =
  | { status: "found"; bytes: Uint8Array }
  | { status: "not_found" }
  | { status: "invalid" };

/** Whether stored `bytes` may be served as `issuer`'s document. */
export type RevocationDocumentCheck = (bytes: Uint8Array, issuer: string) => Promise<boolean>;

/**
 * An Ed25519 did:key (`did:key:z6Mk…`): the only issuers whose statements can be
 * self-signed, so the only ones that can have a document. The length bound keeps base58
 * decoding of hostile paths cheap.
 */
export function isRevocationIssuer(issuer: string): boolean {
  return /^did:key:z[1-9A-HJ-NP-Za-km-z]{1,100}$/.test(issuer) && canDecodeDidKey(issuer);
}

/**
 * Everything that keeps `bytes` from being served as `issuer`'s document: the loader's
 * checks, every statement well formed and self-signed, and every statement about `issuer`
 * (a document filed under one issuer that speaks for another was misfiled or tampered with).
 */
export function revocationDocumentProblems(bytes: Uint8Array, issuer: string): string[] {
  const problems = validateRevocationDocument(bytes);
  if (problems.length > 0) return problems;
  return parseRevocationDocument(bytes).flatMap((statement) => {
    const key = isObject(statement) ? member(statement, "key") : undefined;
    return key === issuer ? [] : [`a statement for ${String(key)} is filed under ${issuer}`];
  });
}

/** Validation on the calling thread: for the CLI, or where no pool is at hand. */
export const checkRevocationDocumentHere: RevocationDocumentCheck = async (bytes, issuer) =>
  revocationDocumentProblems(bytes, issuer).length === 0;

/**
 * Remembered validations, least recently used first. Both outcomes are kept: each is a fact
 * about the bytes, and an invalid document should not cost a validation per request either.
 */
const MEMO_LIMIT = 256;
const memo = new Map<string, Promise<boolean>>();

function memoized(key: string, validate: () => Promise<boolean>): Promise<boolean> {
  const known = memo.get(key);
  if (known !== undefined) {
    memo.delete(key);
    memo.set(key, known);
    return known;
  }
  // Concurrent requests for a cold document share one validation.
  const pending = validate();
  memo.set(key, pending);
  if (memo.size > MEMO_LIMIT) memo.delete(memo.keys().next().value as string);
  // A validation that could not run (a saturated pool) says nothing about the bytes.
  pending.catch(() => {
    if (memo.get(key) === pending) memo.delete(key);
  });
  return pending;
}

/** The SHA-256 of the bytes, as the strong entity tag `sendStoredDocument` would derive. */
export function documentDigest(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

export type RevocationDocumentLookup =
  | { status: "found"; bytes: Uint8Array; etag: string }
  | { status: "not_found" }
  | { status: "invalid" };

/**
 * `readRevocationDocument` plus the strong ETag of the bytes, so they are hashed once.
 *
 * An issuer that is not an Ed25519 did:key has no document, like any issuer nothing was
 * stored for (the reference answers both alike). It is answered without reading the store:
 * imports and rotations only ever file documents under Ed25519 did:keys, and the store never
 * sees an id made of whatever a path held.
 */
export async function lookupRevocationDocument(
  store: DocumentStore,
  issuer: string,
  check: RevocationDocumentCheck = checkRevocationDocumentHere,
): Promise<RevocationDocumentLookup> {
  if (!isRevocationIssuer(issuer)) return { status: "not_found" };
  const bytes = await store.get(COLLECTION, issuer);
  if (bytes === null) return { status: "not_found" };
  const digest = documentDigest(bytes);
  const valid = await memoized(`${digest} ${issuer}`, () => check(bytes, issuer));
  return valid ? { status: "found", bytes, etag: `"${digest}"` } : { status: "invalid" };
}

/**
 * The stored revocation document of `issuer`, only if it can be vouched for. `check`
 * validates bytes not seen before; the server passes `revocationDocumentCheckOn(app.cpuPool)`
 * (endpoints/revocations/contract.ts) on the main thread of the server so Ed25519 runs on a worker.
 */
export async function readRevocationDocument(
  store: DocumentStore,
  issuer: string,
  check: RevocationDocumentCheck = checkRevocationDocumentHere,
): Promise<RevocationDocumentRead> {
  const found = await lookupRevocationDocument(store, issuer, check);
  return found.status === "found" ? { status: "found", bytes: found.bytes } : found;
}

// Writing: only operator commands (import, rotation) write revocation documents.

export type RevocationStoreErrorCode = "revocation_merge_refused";
/** A merge that cannot be done; nothing was written for the issuer concerned. */
export class RevocationStoreError extends codedErrorClass<RevocationStoreErrorCode>(
  "revocation_merge_refused",
) {
  override readonly name = "RevocationStoreError";
}

/** How many times a merge re-reads after losing a compare-and-set before giving up. */
const MERGE_ATTEMPTS = 8;

export interface MergeOutcome {
  issuer: string;
  /** Statements in the stored document afterwards. */
  statements: number;
  /** Statements this merge added (0: the document already held them all; nothing written). */
  added: number;
}

interface PreparedMerge extends MergeOutcome {
  expected: Uint8Array | null;
  /** The new document, or null when nothing changes. */
  bytes: Uint8Array | null;
}

async function prepareMerge(
  store: DocumentStore,
  issuer: string,
  statements: readonly JsonValue[],
  issuedAt: string,
): Promise<PreparedMerge> {
  const expected = await store.get(COLLECTION, issuer);
  let existing: JsonValue[] = [];
  if (expected !== null) {
    const problems = revocationDocumentProblems(expected, issuer);
    if (problems.length > 0) {
      // Merging into it would either drop its statements or publish its faults.
      throw new RevocationStoreError(
        `the stored document for ${issuer} is invalid (${problems[0]}); it was left as is`,
      );
    }
    existing = parseRevocationDocument(expected);
  }
  const merged = mergeStatements(existing, statements);
  const added = merged.length - existing.length;
  if (added === 0) return { issuer, statements: merged.length, added, expected, bytes: null };
  const bytes = Buffer.from(dumpCompact(buildRevocationDocument(merged, issuedAt)), "utf8");
  if (bytes.length > MAX_REVOCATION_DOCUMENT_BYTES) {
    throw new RevocationStoreError(
      `the document for ${issuer} would exceed ${MAX_REVOCATION_DOCUMENT_BYTES} bytes, which readers refuse`,
    );
  }
  return { issuer, statements: merged.length, added, expected, bytes };
}

/**
 * Merges already validated statements into the stored documents of their issuers (library
 * `mergeStatements`: stored statements first, exact repeats dropped). Every issuer's merge
 * is prepared before anything is written, so a stored document that cannot take the merge
 * refuses the whole batch. Writes are compare-and-set, re-read on conflict. `issued_at`
 * records the last change; a merge that adds nothing leaves the bytes (and ETag) alone.
 */
export async function mergeRevocationStatements(
  store: DocumentStore,
  byIssuer: ReadonlyMap<string, readonly JsonValue[]>,
  issuedAt: string,
): Promise<MergeOutcome[]> {
  const prepared: PreparedMerge[] = [];
  for (const [issuer, statements] of byIssuer) {
    prepared.push(await prepareMerge(store, issuer, statements, issuedAt));
  }
  const outcomes: MergeOutcome[] = [];
  for (const first of prepared) {
    let merge = first;
    for (let attempt = 1; ; attempt += 1) {
      if (
        merge.bytes === null ||
        (await store.replace(COLLECTION, merge.issuer, merge.expected, merge.bytes))
      ) {
        break;
      }
      if (attempt === MERGE_ATTEMPTS) {
        throw new RevocationStoreError(
          `the document for ${merge.issuer} kept changing while being merged; try again`,
        );
      }
      merge = await prepareMerge(store, merge.issuer, byIssuer.get(merge.issuer) ?? [], issuedAt);
    }
    outcomes.push({ issuer: merge.issuer, statements: merge.statements, added: merge.added });
  }
  return outcomes;
}

/** Statements grouped by the key they revoke, in document order. */
export function statementsByIssuer(statements: readonly JsonValue[]): Map<string, JsonValue[]> {
  const groups = new Map<string, JsonValue[]>();
  for (const statement of statements) {
    const key = isObject(statement) ? member(statement, "key") : undefined;
    if (typeof key !== "string") throw new TypeError("statements must be validated first");
    const group = groups.get(key);
    if (group === undefined) groups.set(key, [statement]);
    else group.push(statement);
  }
  return groups;
}
