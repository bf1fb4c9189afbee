/**
 * `receiptd notarization verify <file> [--key DID]... [--revocations P|URL]...
 *   [--expect-digest D]`: checks a notarization offline (docs/notarization.md): its claims,
 * its Ed25519 signature, that its issuer is trusted, and its digest.
 *
 * The file may hold the statement itself, the stored document `GET /notarize/{digest}` serves
 * (`{notarization, notarization_digest, …}`) or `POST /notarize`'s answer (`{receipt,
 * digest, …}`); the digest that comes with the statement must then be its digest.
 *
 * Trusted issuers: the `--key`s given; without any, the service key of `DATA_DIR` and every
 * key a `receiptd rotate-key` retired there, i.e. the issuers whose stored revocation
 * document holds a valid retirement statement (reason "key rotation"). Those statements also
 * date the retired keys: a notarization issued at or after its key's retirement is refused.
 *
 * Exit codes, as `continuity-receipt-verify-receipt`'s: 0 valid, 1 invalid or unusable
 * revocations, 2 unreadable input and usage errors.
 */
import { readFile } from "node:fs/promises";
import { verifyNotarization } from "../notarization/index.js";
import { expireNotarizations } from "../notarization/ownership.js";
import { revocationDocumentProblems } from "../revocations/documents.js";
import { ConfigError, loadConfig } from "../service/config.js";
import { ROTATION_REASON } from "../service/key-rotation.js";
import { ServiceKeyError, serviceKeyPath, signerFromPem } from "../service/service-key.js";
import { readIfPresent } from "../storage/atomic-file.js";
import type { DocumentStore } from "../storage/document-store.js";
import { openDocumentStore } from "../storage/open.js";
import { codedErrorClass } from "../verifier/coded-error.js";
import { canDecodeDidKey } from "../verifier/crypto/ed25519.js";
import { dumpJson } from "../verifier/json/dump.js";
import { parseJson } from "../verifier/json/parse.js";
import { isObject, type JsonValue, member } from "../verifier/json/value.js";
import { parseRevocationDocument } from "../verifier/revocations/document.js";
import { verifyStatements } from "../verifier/revocations/statements.js";
import { type CliIo, processIo } from "./entry.js";
import { CliUsageError, type ParsedLine, parseCommand } from "./parse-command.js";
import { statementRevocations } from "./statement-revocations.js";

export const USAGE = [
  "usage: receiptd notarization verify <file> [--key DID]... [--revocations P|URL]... [--expect-digest D]",
  "       receiptd notarization expire [--dry-run]",
].join("\n");

const HELP = `${USAGE}

Checks a wm.context-notarization statement offline: its claims, its signature, its issuer and
its digest (SHA-256 of the JCS bytes without sig). <file> holds the statement, the document
GET /notarize/{digest} serves, or POST /notarize's answer.
--key DID (repeatable): the issuers to trust. Without it: the service key of DATA_DIR (./data)
  and the keys \`receiptd rotate-key\` retired there (their retirement dates them).
--revocations P|URL (repeatable): revocation documents to check the issuer's key against.
--expect-digest D: the digest the statement must have (sha256:<hex> or hex).
Prints the result as JSON. Exit status: 0 valid, 1 invalid, 2 unreadable input or usage error.

expire removes, from the service's store (DATA_DIR, or DATABASE_URL in distributed mode), the
  notarizations stored more than NOTARIZATION_TTL_DAYS whole days ago (0: never) and gives
  their bytes back to their owners' quotas. --dry-run only reports. Run it daily
  (docs/operations.md has a systemd timer); it prints one JSON line of counts. Exit status 0,
  or 2 for a usage or configuration error.
`;

type Env = Readonly<Record<string, string | undefined>>;

class InputError extends codedErrorClass("bad_input") {}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

interface Request {
  path: string;
  keys: string[];
  revocationSources: string[];
  expectedDigest: string | undefined;
}

const OPTIONS = {
  key: { type: "string", multiple: true },
  revocations: { type: "string", multiple: true },
  "expect-digest": { type: "string" },
  "dry-run": { type: "boolean" },
} as const;

interface ExpireRequest {
  expire: true;
  dryRun: boolean;
}

function readRequest(line: ParsedLine<typeof OPTIONS, true>): Request | ExpireRequest {
  const { values, positionals } = line;
  const [command, path, ...extra] = positionals;
  if (command === "expire") {
    if (path !== undefined) throw new CliUsageError(`unexpected argument ${JSON.stringify(path)}`);
    const verifyOnly = (["key", "revocations", "expect-digest"] as const).find(
      (name) => values[name] !== undefined,
    );
    if (verifyOnly !== undefined) throw new CliUsageError(`--${verifyOnly} is for verify`);
    return { expire: true, dryRun: values["dry-run"] === true };
  }
  if (command !== "verify") {
    throw new CliUsageError(
      command === undefined ? "missing command: verify or expire" : `unknown command '${command}'`,
    );
  }
  if (values["dry-run"] !== undefined) throw new CliUsageError("--dry-run is for expire");
  if (path === undefined) throw new CliUsageError("missing <file>");
  if (extra.length > 0) throw new CliUsageError(`unexpected argument ${JSON.stringify(extra[0])}`);
  const keys = values.key ?? [];
  const badKey = keys.find((key) => !canDecodeDidKey(key));
  if (badKey !== undefined) throw new CliUsageError(`--key ${badKey} is not an Ed25519 did:key`);
  return {
    path,
    keys,
    revocationSources: values.revocations ?? [],
    expectedDigest: values["expect-digest"],
  };
}

/** The statement, and the digest the file claims for it (a stored document's or an answer's). */
async function readStatement(path: string): Promise<{ statement: JsonValue; claimed?: string }> {
  let value: JsonValue;
  try {
    value = parseJson(await readFile(path));
  } catch (error) {
    throw new InputError(`cannot read a notarization from ${path}: ${errorText(error)}`);
  }
  if (isObject(value) && value.has("notarization")) {
    const claimed = member(value, "notarization_digest");
    return {
      statement: member(value, "notarization"),
      claimed: typeof claimed === "string" ? claimed : "",
    };
  }
  if (isObject(value) && value.has("receipt") && value.has("notarized")) {
    const claimed = member(value, "digest");
    return {
      statement: member(value, "receipt"),
      claimed: typeof claimed === "string" ? claimed : "",
    };
  }
  return { statement: value };
}

/**
 * The keys a data directory vouches for: its current service key, and each issuer whose
 * stored document holds a valid self-signed retirement by rotation, with those statements.
 * Exported for the tests of rotation.
 */
export async function localTrust(
  dataDir: string,
  store: DocumentStore,
): Promise<{ issuers: string[]; retirements: JsonValue[] }> {
  const issuers: string[] = [];
  const keyPath = serviceKeyPath(dataDir);
  const pem = await readIfPresent(keyPath);
  if (pem !== null) issuers.push(signerFromPem(pem.toString("utf8"), keyPath).did);
  const retirements: JsonValue[] = [];
  for (const issuer of await store.list("revocations")) {
    const bytes = await store.get("revocations", issuer);
    if (bytes === null || revocationDocumentProblems(bytes, issuer).length > 0) continue;
    const byRotation = verifyStatements(parseRevocationDocument(bytes)).revoked.filter(
      (revocation) =>
        revocation.key === issuer && member(revocation.statement, "reason") === ROTATION_REASON,
    );
    if (byRotation.length === 0) continue;
    if (!issuers.includes(issuer)) issuers.push(issuer);
    retirements.push(...byRotation.map((revocation) => revocation.statement));
  }
  return { issuers, retirements };
}

async function trustOfDataDir(env: Env): Promise<{ issuers: string[]; retirements: JsonValue[] }> {
  let dataDir: string;
  let store: DocumentStore;
  try {
    const config = loadConfig(env);
    dataDir = config.dataDir;
    store = await openDocumentStore(config);
  } catch (error) {
    if (error instanceof ConfigError) throw new InputError(error.message);
    throw error;
  }
  try {
    const trust = await localTrust(dataDir, store);
    if (trust.issuers.length === 0) {
      throw new InputError(`no service key in ${dataDir} to trust: pass --key DID`);
    }
    return trust;
  } catch (error) {
    if (error instanceof ServiceKeyError) throw new InputError(error.message);
    throw error;
  } finally {
    await store.close();
  }
}

async function run(request: Request, io: CliIo, env: Env): Promise<number> {
  const { statement, claimed } = await readStatement(request.path);
  const loaded = await statementRevocations(request.revocationSources, io);
  if (loaded === null) return 1;
  let revocations = loaded;
  let trustedIssuers = request.keys;
  if (trustedIssuers.length === 0) {
    const local = await trustOfDataDir(env);
    trustedIssuers = local.issuers;
    revocations = [...revocations, ...local.retirements];
  }
  const result = verifyNotarization(statement, {
    trustedIssuers,
    revocations,
    digest: request.expectedDigest ?? claimed,
  });
  io.stdout(`${dumpJson(result, { indent: 2 })}\n`);
  return result.valid ? 0 : 1;
}

async function expire(dryRun: boolean, io: CliIo, env: Env): Promise<number> {
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) throw new InputError(error.message);
    throw error;
  }
  const ttlDays = config.limits.notarizationTtlDays;
  const store = await openDocumentStore(config);
  try {
    const report = await expireNotarizations(store, { ttlDays, dryRun });
    io.stdout(
      `${JSON.stringify({ dry_run: dryRun, ttl_days: ttlDays, expired: report.expired, freed_bytes: report.freedBytes, adopted: report.adopted })}\n`,
    );
    return 0;
  } finally {
    await store.close();
  }
}

export async function main(
  argv: string[],
  io: CliIo = processIo,
  env: Env = process.env,
): Promise<number> {
  const request = parseCommand(argv, io, {
    options: OPTIONS,
    allowPositionals: true,
    usage: USAGE,
    help: HELP,
    read: readRequest,
  });
  if (typeof request === "number") return request;
  try {
    if ("expire" in request) return await expire(request.dryRun, io, env);
    return await run(request, io, env);
  } catch (error) {
    if (!(error instanceof InputError)) throw error;
    io.stderr(`error: ${error.message}\n`);
    return 2;
  }
}
