/**
 * `receiptd billing --month YYYY-MM`: the monthly statement of API keys, metered from the
 * audit files (service.md §9; rules and rounding in src/access/billing.ts). Key names and
 * plans come from the key store of `DATA_DIR` when there is one; a key missing from it is
 * still billed, under its id.
 */
import { existsSync } from "node:fs";
import { type ApiKey, KeyStore } from "../access/api-keys.js";
import { auditDirFrom } from "../access/audit.js";
import {
  BILLED_CALLS_UNIT,
  CENTS_PER_UNIT,
  formatCents,
  isMonth,
  type MonthlyUsage,
  meterMonth,
} from "../access/billing.js";
import type { Env } from "../io/env.js";
import type { ServiceConfig } from "../service/config.js";
import { openDocumentStore } from "../storage/open.js";
import { configOrReport } from "./config-or-report.js";
import { type CliIo, processIo } from "./entry.js";
import { formatTable } from "./keys.js";
import { parseCommand } from "./parse-command.js";

export const USAGE = "usage: receiptd billing --month YYYY-MM [--audit DIR] [--json]";

const RATE = `${formatCents(CENTS_PER_UNIT)} USD per ${BILLED_CALLS_UNIT.toLocaleString("en-US")} successful calls`;

const HELP = `${USAGE}

Prints each API key's successful (2xx) calls in the month (CALLS) and their amount at
${RATE}, rounded half up to the cent per key; UNBILLED counts the key's other calls. Refused (429), failed (4xx, 5xx), anonymous and x402
calls are never billed, and neither are self-served evaluation keys' calls (counted on a line
of their own). Reads DIR/YYYY-MM-DD.jsonl and .jsonl.gz (default: AUDIT_DIR, else DATA_DIR/audit);
names come from the keys in DATA_DIR (./data).
Exit codes: 0 printed, 2 usage or I/O error.
`;

/** The statement's last line: what its two counts mean (issue 26: UNBILLED was unexplained). */
const COLUMNS =
  "CALLS: the key's successful (2xx) calls, billed. UNBILLED: its refused or failed calls " +
  "(429 and other 4xx, 5xx), counted but never billed.\n";

/** The keys by id, or an empty map when there is no store to ask. */
async function keysById(config: ServiceConfig, io: CliIo): Promise<Map<string, ApiKey>> {
  // Without a data directory there are no keys to name, and nothing should be created there.
  if (!existsSync(config.dataDir)) return new Map();
  try {
    const store = await openDocumentStore(config);
    try {
      const keys = await new KeyStore(store, {
        defaultDailyCap: config.limits.keyDailyCap,
      }).list();
      return new Map(keys.map((key) => [key.id, key]));
    } finally {
      await store.close();
    }
  } catch (error) {
    io.stderr(`warning: key names unavailable: ${(error as Error).message}\n`);
    return new Map();
  }
}

function statementJson(usage: MonthlyUsage, keys: Map<string, ApiKey>) {
  return {
    month: usage.month,
    currency: "USD",
    rate: { calls: BILLED_CALLS_UNIT, amount: formatCents(CENTS_PER_UNIT) },
    keys: usage.keys.map((line) => ({
      id: line.keyId,
      name: keys.get(line.keyId)?.name ?? null,
      plan: keys.get(line.keyId)?.plan ?? null,
      calls: line.calls,
      unbilled: line.unbilled,
      amount: formatCents(line.amountCents),
    })),
    total: { calls: usage.totalCalls, amount: formatCents(usage.totalCents) },
    evaluation: { ...usage.evaluation, amount: "0.00" },
    skipped_lines: usage.skippedLines,
  };
}

function statementTable(usage: MonthlyUsage, keys: Map<string, ApiKey>): string {
  const rows = [
    ["KEY ID", "NAME", "PLAN", "CALLS", "UNBILLED", "AMOUNT USD"],
    ...usage.keys.map((line) => [
      line.keyId,
      keys.get(line.keyId)?.name ?? "-",
      keys.get(line.keyId)?.plan ?? "-",
      String(line.calls),
      String(line.unbilled),
      formatCents(line.amountCents),
    ]),
    ["TOTAL", "", "", String(usage.totalCalls), "", formatCents(usage.totalCents)],
  ];
  const { evaluation } = usage;
  const free =
    evaluation.keys === 0
      ? ""
      : `Evaluation keys (never billed): ${evaluation.keys} key(s), ${evaluation.calls} call(s), ${evaluation.unbilled} unbilled\n`;
  return `Statement for ${usage.month} (${RATE})\n${formatTable(rows, new Set([3, 4, 5]))}${free}${COLUMNS}`;
}

export async function main(
  argv: string[],
  io: CliIo = processIo,
  env: Env = process.env,
): Promise<number> {
  const parsed = parseCommand(argv, io, {
    options: {
      month: { type: "string" },
      audit: { type: "string" },
      json: { type: "boolean" },
    },
    usage: USAGE,
    help: HELP,
  });
  if (typeof parsed === "number") return parsed;
  const { values } = parsed;
  if (values.month === undefined || !isMonth(values.month)) {
    io.stderr(`error: --month YYYY-MM is required (month 01–12)\n${USAGE}\n`);
    return 2;
  }
  const config = configOrReport(env, io);
  if (config === undefined) return 2;
  const auditDir = values.audit ?? auditDirFrom(env, config.dataDir);
  let usage: MonthlyUsage;
  try {
    usage = await meterMonth(auditDir, values.month);
  } catch (error) {
    io.stderr(`error: cannot read the audit files in ${auditDir}: ${(error as Error).message}\n`);
    return 2;
  }
  if (usage.skippedLines > 0) {
    io.stderr(`warning: ${usage.skippedLines} line(s) that are not audit lines were skipped\n`);
  }
  const keys = await keysById(config, io);
  io.stdout(
    values.json ? `${JSON.stringify(statementJson(usage, keys))}\n` : statementTable(usage, keys),
  );
  return 0;
}
