/**
 * `receiptd keys`: create, list and revoke the API keys of the store the server uses
 * (service.md §9, §13: `DATA_DIR`, `KEY_DAILY_CAP`). A key is printed once, at creation; the
 * store keeps only its SHA-256. Running servers see a new key at once and stop accepting a
 * revoked one within `KEY_CACHE_MS`, which `revoke` waits out before it reports success.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import {
  type ApiKey,
  DEFAULT_PLAN,
  dailyCapOf,
  KEY_CACHE_MS,
  KeyNameTakenError,
  KeyOptionError,
  KeyStore,
  KeyStoreError,
} from "../access/api-keys.js";
import { ConfigError, loadConfig } from "../service/config.js";
import { DocumentStoreUnavailableError } from "../storage/document-store.js";
import { openDocumentStore } from "../storage/open.js";
import { type CliIo, isParseArgsError, processIo, usageErrorText } from "./entry.js";

export const USAGE = `usage: receiptd keys create --name NAME [--cap N] [--plan PLAN] [--json]
       receiptd keys list [--json]
       receiptd keys revoke <KEY or NAME>`;

const HELP = `${USAGE}

Manages the API keys in DATA_DIR (./data).
  create  makes a key and prints it once (with its id); only its SHA-256 is stored.
          NAME is unique among keys that are not revoked; --cap is the key's daily cap
          (default: KEY_DAILY_CAP at request time); --plan is a label (default ${DEFAULT_PLAN}).
  list    shows every key (id, name, plan, cap, created, revoked); never the key itself.
  revoke  revokes the key given in clear, or the unrevoked key with that name. Running
          servers refuse it within ${KEY_CACHE_MS} ms; the command returns after that.
Exit codes: 0 done, 1 no such key (revoke), 2 usage or I/O error.
`;

type Env = Readonly<Record<string, string | undefined>>;

class UsageError extends Error {}

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

function keyJson(key: ApiKey, defaultCap: number) {
  return {
    id: key.id,
    name: key.name,
    plan: key.plan,
    daily_cap: key.dailyCap,
    effective_daily_cap: dailyCapOf(key, defaultCap),
    created_at: key.createdAt,
    revoked_at: key.revokedAt,
  };
}

function parseCap(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const cap = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(cap)) {
    throw new UsageError(`--cap must be a whole number, got '${text}'`);
  }
  return cap;
}

async function create(argv: string[], keys: KeyStore, io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      name: { type: "string" },
      cap: { type: "string" },
      plan: { type: "string" },
      json: { type: "boolean" },
    },
    allowPositionals: true,
  });
  if (positionals.length > 0) throw new UsageError(`unexpected argument '${positionals[0]}'`);
  if (values.name === undefined) throw new UsageError("keys create needs --name");
  const { key, record } = await keys.create({
    name: values.name,
    plan: values.plan,
    dailyCap: parseCap(values.cap),
  });
  if (values.json) {
    io.stdout(`${JSON.stringify({ key, ...keyJson(record, keys.defaultDailyCap) })}\n`);
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

async function list(argv: string[], keys: KeyStore, io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: { json: { type: "boolean" } },
    allowPositionals: true,
  });
  if (positionals.length > 0) throw new UsageError(`unexpected argument '${positionals[0]}'`);
  const all = await keys.list();
  const defaultCap = keys.defaultDailyCap;
  if (values.json) {
    io.stdout(`${JSON.stringify(all.map((key) => keyJson(key, defaultCap)))}\n`);
    return 0;
  }
  if (all.length === 0) {
    io.stdout("no keys\n");
    return 0;
  }
  const rows = [
    ["ID", "NAME", "PLAN", "DAILY CAP", "CREATED", "REVOKED"],
    ...all.map((key) => [
      key.id,
      key.name,
      key.plan,
      capText(key, defaultCap),
      key.createdAt,
      key.revokedAt ?? "-",
    ]),
  ];
  io.stdout(formatTable(rows));
  return 0;
}

async function revoke(argv: string[], keys: KeyStore, io: CliIo): Promise<number> {
  const { positionals } = parseArgs({ args: argv, options: {}, allowPositionals: true });
  const [target, ...extra] = positionals;
  if (target === undefined || extra.length > 0) {
    throw new UsageError("keys revoke takes one key or name");
  }
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

const ACTIONS: Record<string, (argv: string[], keys: KeyStore, io: CliIo) => Promise<number>> = {
  create,
  list,
  revoke,
};

export async function main(
  argv: string[],
  io: CliIo = processIo,
  env: Env = process.env,
): Promise<number> {
  const [action, ...rest] = argv;
  if (action === "--help" || action === "-h" || action === "help") {
    io.stdout(HELP);
    return 0;
  }
  const run = action === undefined ? undefined : ACTIONS[action];
  if (run === undefined) {
    io.stderr(`${action === undefined ? "" : `error: unknown action '${action}'\n`}${USAGE}\n`);
    return 2;
  }
  try {
    const config = loadConfig(env);
    const store = await openDocumentStore(config);
    try {
      return await run(
        rest,
        new KeyStore(store, { defaultDailyCap: config.limits.keyDailyCap }),
        io,
      );
    } finally {
      await store.close();
    }
  } catch (error) {
    if (error instanceof UsageError || isParseArgsError(error)) {
      io.stderr(`error: ${usageErrorText(error)}\n${USAGE}\n`);
      return 2;
    }
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
