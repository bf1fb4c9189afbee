/**
 * `receiptd crystals`: the client side of memory crystals (service.md §6) on the command line.
 * Keys never leave this process: `seal` turns plaintext into the envelope `POST /crystals`
 * takes, `open` turns an envelope (as `GET /crystals/{id}` serves it) back into plaintext.
 */
import { randomBytes } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import {
  type CrystalEnvelope,
  CrystalOpenError,
  checkSealOptions,
  openCrystal,
  sealCrystal,
  tenantHashOf,
} from "../crystals/client.js";
import {
  CRYSTAL_CIPHERS,
  CRYSTAL_KEY_BYTES,
  type CrystalCipher,
  isCrystalCipher,
} from "../crystals/envelope.js";
import { expireCrystals } from "../crystals/expiry.js";
import type { Env } from "../io/env.js";
import { ConfigError, loadConfig } from "../service/config.js";
import { openDocumentStore } from "../storage/open.js";
import { codedErrorClass } from "../verifier/coded-error.js";
import { CanonicalizationError, canonicalText } from "../verifier/json/canonical.js";
import { parseJson, StrictJsonError } from "../verifier/json/parse.js";
import { fromPlain, isObject, type JsonObject, type JsonValue } from "../verifier/json/value.js";
import { processIo } from "./entry.js";
import { parseCommand } from "./parse-command.js";

export const USAGE = [
  "usage: receiptd crystals keygen --out KEY_FILE",
  "       receiptd crystals tenant --secret-file FILE",
  "       receiptd crystals seal --key-file KEY_FILE --tenant T [--parent ID] [--cipher C]",
  "                              [--metadata JSON] [--created-at TIME] < plaintext > envelope.json",
  "       receiptd crystals open --key-file KEY_FILE < envelope.json > plaintext",
  "       receiptd crystals expire [--dry-run]",
].join("\n");

const HELP = `${USAGE}

keygen   writes a new random ${CRYSTAL_KEY_BYTES}-byte key to KEY_FILE as 64 hex digits (mode 0600);
         an existing file is never overwritten.
tenant   prints the tenant hash of a tenant secret: sha256: + hex SHA-256 of FILE's bytes.
         Anyone who knows a tenant hash can read that tenant's envelopes and lineage (never
         the plaintext), so derive it from a secret, not from a name.
seal     encrypts stdin (--cipher ${CRYSTAL_CIPHERS.join(" | ")}, default ${CRYSTAL_CIPHERS[0]})
         and prints the envelope in its canonical (JCS) form, as the service stores it.
         --parent names the crystal this one follows (omit for a root); --metadata is a
         public, unencrypted JSON object; --created-at defaults to now.
open     checks the envelope on stdin and writes its plaintext to stdout.
expire   removes, from the service's store (DATA_DIR, or DATABASE_URL in distributed mode),
         the crystals first stored more than CRYSTAL_TTL_DAYS whole days ago (0: never),
         with their lineage entries and quota bytes; a crystal that a younger one descends
         from is kept until that one expires too. --dry-run only reports. Run it daily
         (docs/operations.md has a systemd timer); it prints one JSON line of counts.

A key file holds the key as 64 hex digits (a trailing newline is fine) or as 32 raw bytes.
Exit codes: 0 done, 1 the envelope does not open (altered, or the wrong key), 2 usage or I/O error.
`;

/** Where the command reads and writes; tests pass buffers instead of the process streams. */
export interface CrystalCliIo {
  stdin(): Promise<Buffer>;
  stdout(data: Uint8Array | string): void;
  stderr(text: string): void;
}

async function readAll(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) {
    chunks.push(typeof chunk === "string" ? Buffer.from(chunk) : chunk);
  }
  return Buffer.concat(chunks);
}

const processCrystalIo: CrystalCliIo = {
  stdin: () => readAll(process.stdin),
  stdout: (data) => process.stdout.write(data),
  stderr: processIo.stderr,
};

/** A refusal worth one line on stderr and exit code 2. */
class UsageError extends codedErrorClass("usage") {}

const HEX_KEY = /^[0-9a-fA-F]{64}\r?\n?$/;

async function readKey(file: string | undefined): Promise<Buffer> {
  if (file === undefined) throw new UsageError("--key-file is required");
  let bytes: Buffer;
  try {
    bytes = await readFile(file);
  } catch (error) {
    throw new UsageError(`cannot read ${file}: ${(error as Error).message}`);
  }
  if (bytes.length === CRYSTAL_KEY_BYTES) return bytes;
  const text = bytes.toString("latin1");
  if (HEX_KEY.test(text)) return Buffer.from(text.slice(0, 64), "hex");
  throw new UsageError(`${file} is not a key: 64 hex digits or ${CRYSTAL_KEY_BYTES} raw bytes`);
}

function metadataFrom(text: string | undefined): JsonObject {
  if (text === undefined) return new Map();
  let value: JsonValue;
  try {
    value = parseJson(text);
  } catch (error) {
    if (!(error instanceof StrictJsonError)) throw error;
    throw new UsageError(`--metadata is not JSON: ${error.message}`);
  }
  if (!isObject(value)) throw new UsageError("--metadata must be a JSON object");
  return value;
}

function cipherFrom(text: string | undefined): CrystalCipher | undefined {
  if (text === undefined || isCrystalCipher(text)) return text;
  throw new UsageError(`--cipher must be one of ${CRYSTAL_CIPHERS.join(", ")}`);
}

/** The envelope in the form the service stores: JCS, so `seal`'s output is what GET serves. */
function envelopeText(envelope: CrystalEnvelope): string {
  try {
    return canonicalText(fromPlain(envelope));
  } catch (error) {
    if (!(error instanceof CanonicalizationError)) throw error;
    throw new UsageError(`--metadata has no canonical form: ${error.message}`);
  }
}

function stringMember(envelope: JsonObject, name: string): string {
  const value = envelope.get(name);
  if (typeof value !== "string") throw new CrystalOpenError(`${name} must be a string`);
  return value;
}

/** The members `openCrystal` reads, from a strictly parsed envelope. */
function openableEnvelope(bytes: Buffer) {
  let value: JsonValue;
  try {
    value = parseJson(bytes);
  } catch (error) {
    if (!(error instanceof StrictJsonError)) throw error;
    throw new CrystalOpenError(`the envelope is not JSON: ${error.message}`);
  }
  if (!isObject(value)) throw new CrystalOpenError("the envelope is not a JSON object");
  const parent = value.get("parent_crystal_id") ?? null;
  if (parent !== null && typeof parent !== "string") {
    throw new CrystalOpenError("parent_crystal_id must be a string or null");
  }
  const size = value.get("size_bytes");
  const optionalString = (name: string) =>
    value.has(name) ? stringMember(value, name) : undefined;
  return {
    spec: optionalString("spec"),
    cipher: optionalString("cipher"),
    crystal_id: stringMember(value, "crystal_id"),
    parent_crystal_id: parent,
    tenant_hash: stringMember(value, "tenant_hash"),
    nonce: stringMember(value, "nonce"),
    ciphertext: stringMember(value, "ciphertext"),
    size_bytes: typeof size === "number" ? size : undefined,
    created_at: stringMember(value, "created_at"),
  };
}

async function keygen(out: string | undefined, io: CrystalCliIo): Promise<number> {
  if (out === undefined) throw new UsageError("--out is required");
  const key = randomBytes(CRYSTAL_KEY_BYTES);
  try {
    await writeFile(out, `${key.toString("hex")}\n`, { mode: 0o600, flag: "wx" });
  } catch (error) {
    throw new UsageError(`cannot create ${out}: ${(error as Error).message}`);
  }
  io.stderr(`wrote a new crystal key to ${out}\n`);
  return 0;
}

async function tenant(secretFile: string | undefined, io: CrystalCliIo): Promise<number> {
  if (secretFile === undefined) throw new UsageError("--secret-file is required");
  let secret: Buffer;
  try {
    secret = await readFile(secretFile);
  } catch (error) {
    throw new UsageError(`cannot read ${secretFile}: ${(error as Error).message}`);
  }
  if (secret.length === 0) throw new UsageError(`${secretFile} is empty`);
  io.stdout(`${tenantHashOf(secret)}\n`);
  return 0;
}

interface SealArguments {
  "key-file"?: string;
  tenant?: string;
  parent?: string;
  cipher?: string;
  metadata?: string;
  "created-at"?: string;
}

async function seal(values: SealArguments, io: CrystalCliIo): Promise<number> {
  const key = await readKey(values["key-file"]);
  if (values.tenant === undefined) throw new UsageError("--tenant is required");
  const options = {
    key,
    tenantHash: values.tenant,
    parentCrystalId: values.parent ?? null,
    cipher: cipherFrom(values.cipher),
    metadataPublic: metadataFrom(values.metadata),
    createdAt: values["created-at"],
  };
  try {
    // Before stdin is read, so a mistyped option does not wait for the plaintext.
    checkSealOptions(options);
  } catch (error) {
    if (!(error instanceof RangeError)) throw error;
    throw new UsageError(error.message);
  }
  const envelope = sealCrystal({ ...options, plaintext: await io.stdin() });
  io.stdout(`${envelopeText(envelope)}\n`);
  return 0;
}

async function open(keyFile: string | undefined, io: CrystalCliIo): Promise<number> {
  const key = await readKey(keyFile);
  try {
    io.stdout(openCrystal(openableEnvelope(await io.stdin()), key));
    return 0;
  } catch (error) {
    if (!(error instanceof CrystalOpenError)) throw error;
    io.stderr(`error: ${error.message}\n`);
    return 1;
  }
}

/** The options each action takes; any other is refused rather than silently ignored. */
const ACTION_OPTIONS: Record<string, readonly string[]> = {
  keygen: ["out"],
  tenant: ["secret-file"],
  seal: ["key-file", "tenant", "parent", "cipher", "metadata", "created-at"],
  open: ["key-file"],
  expire: ["dry-run"],
};

async function expire(dryRun: boolean, io: CrystalCliIo, env: Env): Promise<number> {
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig(env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    throw new UsageError(error.message);
  }
  const store = await openDocumentStore(config);
  try {
    const report = await expireCrystals(store, { ttlDays: config.limits.crystalTtlDays, dryRun });
    io.stdout(
      `${JSON.stringify({ dry_run: dryRun, ttl_days: config.limits.crystalTtlDays, expired: report.expired, freed_bytes: report.freedBytes, kept_for_descendants: report.keptForDescendants, adopted: report.adopted })}\n`,
    );
    return 0;
  } finally {
    await store.close();
  }
}

export async function main(
  argv: string[],
  io: CrystalCliIo = processCrystalIo,
  env: Env = process.env,
): Promise<number> {
  const parsed = parseCommand(argv, io, {
    options: {
      out: { type: "string" },
      "secret-file": { type: "string" },
      "key-file": { type: "string" },
      tenant: { type: "string" },
      parent: { type: "string" },
      cipher: { type: "string" },
      metadata: { type: "string" },
      "created-at": { type: "string" },
      "dry-run": { type: "boolean" },
    },
    allowPositionals: true,
    usage: USAGE,
    help: HELP,
  });
  if (typeof parsed === "number") return parsed;
  const { values, positionals } = parsed;
  const [action = "", ...extra] = positionals;
  const allowed = ACTION_OPTIONS[action];
  if (allowed === undefined) {
    io.stderr(`${USAGE}\n`);
    return 2;
  }
  try {
    if (extra.length > 0) throw new UsageError(`unexpected argument '${extra[0]}'`);
    const stray = Object.keys(values).find((name) => !allowed.includes(name));
    if (stray !== undefined) throw new UsageError(`--${stray} does not apply to '${action}'`);
    switch (action) {
      case "keygen":
        return await keygen(values.out, io);
      case "tenant":
        return await tenant(values["secret-file"], io);
      case "seal":
        return await seal(values, io);
      case "expire":
        return await expire(values["dry-run"] === true, io, env);
      default: // "open", the one action left
        return await open(values["key-file"], io);
    }
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    io.stderr(`error: ${error.message}\n`);
    return 2;
  }
}
