/**
 * `receiptd audit compact`: the audit directory's housekeeping on demand (issue 37). Every web
 * process already runs it each hour over its AUDIT_DIR (src/access/audit.ts); the command is
 * for a directory no running process keeps (a host whose web processes are stopped, an archive
 * copy), and `--dry-run` shows what AUDIT_RETENTION_DAYS would remove before it is changed.
 */
import { auditDirFrom } from "../access/audit.js";
import { compactAuditDir } from "../access/audit-files.js";
import type { Env } from "../io/env.js";
import { configOrReport } from "./config-or-report.js";
import { type CliIo, processIo } from "./entry.js";
import { CliUsageError, parseCommand } from "./parse-command.js";

export const USAGE = "usage: receiptd audit compact [--audit DIR] [--dry-run]";

const HELP = `${USAGE}

compact  compresses each closed day of the audit directory (DIR, default: AUDIT_DIR, else
         DATA_DIR/audit) from YYYY-MM-DD.jsonl to YYYY-MM-DD.jsonl.gz (a day is closed an
         hour after its UTC midnight), and removes the days older than AUDIT_RETENTION_DAYS
         (default 62; 0: none). --dry-run only reports. Safe beside running web processes,
         which do the same every hour. Prints one JSON line: dry_run, retention_days,
         compressed, removed, leftovers, busy (days a writer was still appending to), bytes.
Exit codes: 0 done, 2 usage or I/O error.
`;

export async function main(
  argv: string[],
  io: CliIo = processIo,
  env: Env = process.env,
): Promise<number> {
  const parsed = parseCommand(argv, io, {
    options: { audit: { type: "string" }, "dry-run": { type: "boolean" } },
    allowPositionals: true,
    usage: USAGE,
    help: HELP,
    read: ({ values, positionals }) => {
      const [command, ...extra] = positionals;
      if (command !== "compact") {
        throw new CliUsageError(
          command === undefined ? "missing command: compact" : `unknown command '${command}'`,
        );
      }
      if (extra.length > 0) throw new CliUsageError(`unexpected argument '${extra[0]}'`);
      return { audit: values.audit, dryRun: values["dry-run"] === true };
    },
  });
  if (typeof parsed === "number") return parsed;
  const config = configOrReport(env, io);
  if (config === undefined) return 2;
  const auditDir = parsed.audit ?? auditDirFrom(env, config.dataDir);
  try {
    const report = await compactAuditDir(auditDir, {
      retentionDays: config.auditRetentionDays,
      nowMs: Date.now(),
      dryRun: parsed.dryRun,
    });
    io.stdout(
      `${JSON.stringify({
        dry_run: report.dryRun,
        retention_days: report.retentionDays,
        compressed: report.compressed,
        removed: report.removed,
        leftovers: report.leftovers,
        busy: report.busy,
        bytes: report.bytes,
      })}\n`,
    );
    return 0;
  } catch (error) {
    io.stderr(
      `error: cannot compact the audit files in ${auditDir}: ${(error as Error).message}\n`,
    );
    return 2;
  }
}
