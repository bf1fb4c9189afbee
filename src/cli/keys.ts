/**
 * `receiptd keys`: create, list and revoke the API keys of the store the server uses
 * (service.md §9, §13: `DATA_DIR`, `KEY_DAILY_CAP`). A key is printed once, at creation; the
 * store keeps only its SHA-256. Running servers see a new key at once and stop accepting a
 * revoked one within `KEY_CACHE_MS`, which `revoke` waits out before it reports success.
 */
import { setTimeout as sleep } from "node:timers/promises";
import {
  type ApiKey,
  DEFAULT_PLAN,
  dailyCapOf,
  isExpired,
  KEY_CACHE_MS,
  KeyNameTakenError,
  KeyOptionError,
  KeyStore,
  KeyStoreError,
} from "../access/api-keys.js";
import type { Env } from "../io/env.js";
import { ConfigError, loadConfig, type ServiceConfig } from "../service/config.js";
import { readServerFile, serverFilePath, serverLiveness } from "../service/server-file.js";
import { serviceKeyPath, signerFromPem } from "../service/service-key.js";
import { readIfPresent } from "../storage/atomic-file.js";
import { DocumentStoreUnavailableError } from "../storage/document-store.js";
import { openDocumentStore } from "../storage/open.js";
import { type CliIo, processIo } from "./entry.js";
import { CliUsageError, parseAction, parseCommand, refuseArguments } from "./parse-command.js";

export const USAGE = `usage: receiptd keys create --name NAME [--cap N] [--plan PLAN] [--json | --key-only]
       receiptd keys list [--all] [--json]
       receiptd keys revoke <KEY or NAME>`;

const HELP = `${USAGE}

Manages the API keys in DATA_DIR (./data).
  create  makes a key and prints it once (with its id); only its SHA-256 is stored.
          NAME is unique among keys that are not revoked; --cap is the key's daily cap
          (default: KEY_DAILY_CAP at request time); --plan is a label (default ${DEFAULT_PLAN}).
          --key-only prints nothing but the key (KEY=$(receiptd keys create … --key-only)).
          On stderr it says which DATA_DIR it used and whether a server runs on it (from
          DATA_DIR/server.json), and warns when none does; with RECEIPTD_URL set it also
          compares that server's issuer (GET /info) with DATA_DIR's service key.
  list    shows the keys (id, name, plan, kind, cap, created, expires, revoked); never the
          key itself. Kind 'evaluation' marks self-served evaluation keys (POST
          /keys/evaluation): they expire (EXPIRES, '(expired)' once past) and are never billed.
          Expired evaluation keys are left out (a line says how many) unless --all is given.
  revoke  revokes the key given in clear, or the unrevoked key with that name. Running
          servers refuse it within ${KEY_CACHE_MS} ms; the command returns after that.
Exit codes: 0 done, 1 no such key (revoke), 2 usage or I/O error.
`;

/** Left-aligned columns, except those listed in `right`; two spaces between columns. */
export function formatTable(rows: string[][], right: ReadonlySet<number> = new Set()): string {
  const widths: number[] = [];
  for (const row of rows) {
    row.forEach((cell, index) => {
      widths[index] = Math.max(widths[index] ?? 0, cell.length);
    });
  }
  return rows
    .map((row) =>
      row
        .map((cell, index) => {
          const width = widths[index] ?? 0;
          return right.has(index) ? cell.padStart(width) : cell.padEnd(width);
        })
        .join("  ")
        .trimEnd(),
    )
    .map((line) => `${line}\n`)
    .join("");
}

function capText(key: ApiKey, defaultCap: number): string {
  return key.dailyCap === null ? `${defaultCap} (default)` : String(key.dailyCap);
}

function keyJson(key: ApiKey, defaultCap: number, nowMs: number) {
  return {
    id: key.id,
    name: key.name,
    plan: key.plan,
    kind: key.kind,
    daily_cap: key.dailyCap,
    effective_daily_cap: dailyCapOf(key, defaultCap),
    created_at: key.createdAt,
    expires_at: key.expiresAt,
    expired: isExpired(key, nowMs),
    revoked_at: key.revokedAt,
  };
}

function expiryText(key: ApiKey, nowMs: number): string {
  if (key.expiresAt === null) return "-";
  return isExpired(key, nowMs) ? `${key.expiresAt} (expired)` : key.expiresAt;
}

function parseCap(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const cap = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(cap)) {
    throw new CliUsageError(`--cap must be a whole number, got '${text}'`);
  }
  return cap;
}

interface KeysContext {
  config: ServiceConfig;
  env: Env;
}

/** How long `keys create` waits for RECEIPTD_URL's `/info` before it gives up checking. */
const INFO_TIMEOUT_MS = 3000;

async function issuerOf(dataDir: string): Promise<string | null> {
  const path = serviceKeyPath(dataDir);
  const pem = await readIfPresent(path);
  return pem === null ? null : signerFromPem(pem.toString("utf8"), path).did;
}

async function issuerAt(url: string): Promise<string> {
  const response = await fetch(new URL("/info", url), {
    signal: AbortSignal.timeout(INFO_TIMEOUT_MS),
  });
  if (!response.ok) throw new Error(`GET /info answered ${response.status}`);
  const info = (await response.json()) as { issuer?: unknown };
  if (typeof info.issuer !== "string") throw new Error("GET /info names no issuer");
  return info.issuer;
}

/**
 * Where the key went and whether the server the operator means will know it (issue 14: a key
 * made in another directory's ./data got 401 with no hint why). Only the server's DATA_DIR
 * (or its PostgreSQL store) knows a key, so the command says which one it used, names the
 * server running on it (DATA_DIR/server.json), and warns when none runs there or when the
 * server at RECEIPTD_URL signs with another DATA_DIR's key.
 */
export async function dataDirNotes(context: KeysContext): Promise<string[]> {
  const { config, env } = context;
  const { dataDir } = config;
  const notes = [
    config.databaseUrl === null
      ? `DATA_DIR: ${dataDir}`
      : `DATA_DIR: ${dataDir} (keys are stored in PostgreSQL, DATABASE_URL)`,
  ];
  const server = await readServerFile(dataDir);
  const liveness = server === null ? null : serverLiveness(server);
  if (server !== null && liveness === "running") {
    notes.push(`server: ${server.url} (pid ${server.pid}) runs on this DATA_DIR`);
  } else if (server !== null && liveness === "unknown") {
    notes.push(`server: ${server.url} on host ${server.hostname} last started on this DATA_DIR`);
  } else if (config.databaseUrl === null) {
    notes.push(
      `warning: no receiptd serve is running on this DATA_DIR (${server === null ? `no ${serverFilePath(dataDir)}` : `pid ${server.pid} has exited`}). A server started with another DATA_DIR (its ./data is relative to where it was started) will refuse this key with 401; set DATA_DIR to the server's.`,
    );
  }
  const url = env.RECEIPTD_URL;
  if (url) {
    try {
      const [theirs, ours] = await Promise.all([issuerAt(url), issuerOf(dataDir)]);
      if (theirs === ours) {
        notes.push(`server: ${url} signs with this DATA_DIR's service key`);
      } else {
        notes.push(
          `warning: the server at RECEIPTD_URL ${url} signs as ${theirs}, but this DATA_DIR's service key is ${ours ?? "missing"}: it does not use this DATA_DIR, and will refuse this key with 401 unless both share one PostgreSQL store.`,
        );
      }
    } catch (error) {
      const cause = error instanceof Error ? error.message : String(error);
      notes.push(`warning: cannot check RECEIPTD_URL ${url}: ${cause}`);
    }
  }
  return notes;
}

/** `keys create`'s options: the key's name, cap and plan, and how to print it. */
function readCreate(argv: string[], io: CliIo) {
  return parseCommand(argv, io, {
    options: {
      name: { type: "string" },
      cap: { type: "string" },
      plan: { type: "string" },
      json: { type: "boolean" },
      "key-only": { type: "boolean" },
    },
    allowPositionals: true,
    usage: USAGE,
    help: HELP,
    read: ({ values, positionals }) => {
      refuseArguments(positionals);
      if (values.name === undefined) throw new CliUsageError("keys create needs --name");
      if (values.json && values["key-only"]) {
        throw new CliUsageError("--json and --key-only exclude each other");
      }
      return {
        name: values.name,
        plan: values.plan,
        dailyCap: parseCap(values.cap),
        json: values.json ?? false,
        keyOnly: values["key-only"] ?? false,
      };
    },
  });
}

async function create(
  request: Exclude<ReturnType<typeof readCreate>, number>,
  keys: KeyStore,
  io: CliIo,
  context: KeysContext,
): Promise<number> {
  const { json, keyOnly, ...options } = request;
  const { key, record } = await keys.create(options);
  for (const note of await dataDirNotes(context)) io.stderr(`${note}\n`);
  if (keyOnly) {
    io.stdout(`${key}\n`);
    return 0;
  }
  if (json) {
    io.stdout(`${JSON.stringify({ key, ...keyJson(record, keys.defaultDailyCap, Date.now()) })}\n`);
    return 0;
  }
  io.stdout(
    [
      `key:       ${key}`,
      `id:        ${record.id}`,
      `name:      ${record.name}`,
      `plan:      ${record.plan}`,
      `daily cap: ${capText(record, keys.defaultDailyCap)}`,
      "The key is shown only now and cannot be recovered; store it safely.",
      "",
    ].join("\n"),
  );
  return 0;
}

/**
 * Every key, but for expired evaluation keys unless `--all`: the service may issue a few
 * hundred a day, and once expired they only clutter the list (revoked keys stay: an operator
 * revoked them, and statements still name them).
 */
function readList(argv: string[], io: CliIo) {
  return parseCommand(argv, io, {
    options: { json: { type: "boolean" }, all: { type: "boolean" } },
    allowPositionals: true,
    usage: USAGE,
    help: HELP,
    read: ({ values, positionals }) => {
      refuseArguments(positionals);
      return { json: values.json ?? false, all: values.all ?? false };
    },
  });
}

async function list(
  request: Exclude<ReturnType<typeof readList>, number>,
  keys: KeyStore,
  io: CliIo,
): Promise<number> {
  const now = Date.now();
  const stored = await keys.list();
  const all = request.all
    ? stored
    : stored.filter((key) => key.kind !== "evaluation" || !isExpired(key, now));
  const hidden = stored.length - all.length;
  const defaultCap = keys.defaultDailyCap;
  if (request.json) {
    io.stdout(`${JSON.stringify(all.map((key) => keyJson(key, defaultCap, now)))}\n`);
    return 0;
  }
  const footer =
    hidden === 0 ? "" : `${hidden} expired evaluation key(s) not shown; --all lists them\n`;
  if (all.length === 0) {
    io.stdout(`no keys\n${footer}`);
    return 0;
  }
  const rows = [
    ["ID", "NAME", "PLAN", "KIND", "DAILY CAP", "CREATED", "EXPIRES", "REVOKED"],
    ...all.map((key) => [
      key.id,
      key.name,
      key.plan,
      key.kind,
      capText(key, defaultCap),
      key.createdAt,
      expiryText(key, now),
      key.revokedAt ?? "-",
    ]),
  ];
  io.stdout(`${formatTable(rows)}${footer}`);
  return 0;
}

function readRevoke(argv: string[], io: CliIo) {
  return parseCommand(argv, io, {
    allowPositionals: true,
    usage: USAGE,
    help: HELP,
    read: ({ positionals }) => {
      const [target, ...extra] = positionals;
      if (target === undefined || extra.length > 0) {
        throw new CliUsageError("keys revoke takes one key or name");
      }
      return target;
    },
  });
}

async function revoke(target: string, keys: KeyStore, io: CliIo): Promise<number> {
  const result = await keys.revoke(target);
  switch (result.status) {
    case "not_found":
      io.stderr("error: no such key, and no unrevoked key with that name\n");
      return 1;
    case "already_revoked":
      io.stdout(
        `key ${result.key.id} (${result.key.name}) was already revoked at ${result.key.revokedAt}\n`,
      );
      return 0;
    case "revoked":
      // Servers may hold the live record this long; after it, none accepts the key.
      await sleep(KEY_CACHE_MS);
      io.stdout(`revoked key ${result.key.id} (${result.key.name}) at ${result.key.revokedAt}\n`);
      return 0;
  }
}

/**
 * Each action reads its own options first, so a usage error is answered before the store is
 * opened; the action then runs against the store.
 */
const ACTIONS = {
  create: (argv: string[], io: CliIo) => {
    const request = readCreate(argv, io);
    return typeof request === "number"
      ? request
      : (keys: KeyStore, context: KeysContext) => create(request, keys, io, context);
  },
  list: (argv: string[], io: CliIo) => {
    const request = readList(argv, io);
    return typeof request === "number" ? request : (keys: KeyStore) => list(request, keys, io);
  },
  revoke: (argv: string[], io: CliIo) => {
    const target = readRevoke(argv, io);
    return typeof target === "number" ? target : (keys: KeyStore) => revoke(target, keys, io);
  },
} satisfies Record<
  string,
  (
    argv: string[],
    io: CliIo,
  ) => number | ((keys: KeyStore, context: KeysContext) => Promise<number>)
>;

export async function main(
  argv: string[],
  io: CliIo = processIo,
  env: Env = process.env,
): Promise<number> {
  const picked = parseAction(argv, io, {
    actions: Object.keys(ACTIONS) as (keyof typeof ACTIONS)[],
    usage: USAGE,
    help: HELP,
  });
  if (typeof picked === "number") return picked;
  const run = ACTIONS[picked.action](picked.rest, io);
  if (typeof run === "number") return run;
  try {
    const config = loadConfig(env);
    const store = await openDocumentStore(config);
    try {
      return await run(new KeyStore(store, { defaultDailyCap: config.limits.keyDailyCap }), {
        config,
        env,
      });
    } finally {
      await store.close();
    }
  } catch (error) {
    if (
      error instanceof ConfigError ||
      error instanceof KeyOptionError ||
      error instanceof KeyNameTakenError ||
      error instanceof KeyStoreError ||
      error instanceof DocumentStoreUnavailableError
    ) {
      io.stderr(`error: ${error.message}\n`);
      return 2;
    }
    throw error;
  }
}
