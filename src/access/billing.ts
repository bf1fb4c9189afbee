/**
 * Billing of API keys (service.md §9): 5.00 USD per 10,000 successful calls, metered from a
 * month's audit files. Only lines of key principals whose answer is charged count: a 2xx
 * (`isChargedStatus`, the rule the daily caps follow too), or a refusal marked
 * `"charged":true` for the work it reports (issue 22); 429s, other 4xx, 5xx, 304s, anonymous and
 * x402 lines are never invoiced (x402 calls were paid as they were made), and neither are
 * evaluation keys' lines (`eval:<id>`): they are tallied apart, for the operator to see, and
 * never priced.
 *
 * Amounts are computed in whole cents with integers only: a key's amount is
 * calls × 500 / 10,000 cents, rounded half up to the cent (so 10 calls, half a cent, cost
 * 0.01 USD and 9 calls cost nothing); the total is the sum of the rounded key amounts, so a
 * statement's lines always add up.
 */
import { basename } from "node:path";
import { type AuditLine, parseAuditLine } from "./audit.js";
import { listAuditDays, readAuditFileLines } from "./audit-files.js";
import { isChargedStatus } from "./caps.js";

export const BILLED_CALLS_UNIT = 10_000;
export const CENTS_PER_UNIT = 500;

const MONTH_PATTERN = /^(\d{4})-(0[1-9]|1[0-2])$/;
const KEY_PRINCIPAL_PREFIX = "key:";
const EVALUATION_PRINCIPAL_PREFIX = "eval:";

export function isMonth(text: string): boolean {
  return MONTH_PATTERN.test(text);
}

/** The amount of `calls` successful calls in cents, rounded half up. */
export function amountCents(calls: number): number {
  const numerator = calls * CENTS_PER_UNIT;
  return Math.floor((2 * numerator + BILLED_CALLS_UNIT) / (2 * BILLED_CALLS_UNIT));
}

/** `1234` → `"12.34"`. */
export function formatCents(cents: number): string {
  return `${Math.floor(cents / 100)}.${String(cents % 100).padStart(2, "0")}`;
}

export interface KeyUsage {
  keyId: string;
  /** 2xx responses: the billed calls. */
  calls: number;
  /** Every other response of the key (refused, failed): shown, never billed. */
  unbilled: number;
  amountCents: number;
}

export interface EvaluationUsage {
  /** Evaluation keys with at least one audit line in the month. */
  keys: number;
  /** Their 2xx calls (what a key would be billed for). */
  calls: number;
  /** Their other calls. */
  unbilled: number;
}

/**
 * A result, or a refusal charged for the work it reports (`"charged":true`, issue 22); never
 * an `Idempotency-Key` replay (`"replayed":true`, issue 28), whose first answer was billed, nor a
 * 2xx that carries no work done (`"charged":false`, issue 37: MCP tool errors).
 */
function isBilled(line: AuditLine): boolean {
  if (line.replayed || line.unchargedResult) return false;
  return isChargedStatus(line.status) || line.chargedRefusal;
}

export interface MonthlyUsage {
  month: string;
  /** Every key with at least one audit line in the month, by id. */
  keys: KeyUsage[];
  totalCalls: number;
  totalCents: number;
  /** Calls made with evaluation keys: shown, never billed. */
  evaluation: EvaluationUsage;
  /** Audit files read, by day (`.jsonl.gz` for a compressed day, issue 37). */
  files: string[];
  /** Lines that were not audit lines (a line torn by a crash, or foreign text). */
  skippedLines: number;
}

/**
 * Meters `month` (`YYYY-MM`) from the day files in `auditDir`, plain or compressed
 * (audit-files.ts says which files a day has). Throws when the directory cannot be read: an
 * operator who points at the wrong place should not get an empty bill.
 */
export async function meterMonth(auditDir: string, month: string): Promise<MonthlyUsage> {
  if (!isMonth(month)) throw new RangeError(`a month is YYYY-MM, got '${month}'`);
  const files = (await listAuditDays(auditDir, `${month}-`)).flatMap((day) => day.paths);
  const usage = new Map<string, { calls: number; unbilled: number }>();
  const evaluationKeys = new Set<string>();
  const evaluation: EvaluationUsage = { keys: 0, calls: 0, unbilled: 0 };
  let skippedLines = 0;
  for (const file of files) {
    for await (const text of readAuditFileLines(file)) {
      if (text === "") continue;
      const line = parseAuditLine(text);
      if (line === null) {
        skippedLines += 1;
        continue;
      }
      if (line.principal.startsWith(EVALUATION_PRINCIPAL_PREFIX)) {
        evaluationKeys.add(line.principal);
        if (isBilled(line)) evaluation.calls += 1;
        else evaluation.unbilled += 1;
        continue;
      }
      if (!line.principal.startsWith(KEY_PRINCIPAL_PREFIX)) continue;
      const keyId = line.principal.slice(KEY_PRINCIPAL_PREFIX.length);
      let counts = usage.get(keyId);
      if (counts === undefined) {
        counts = { calls: 0, unbilled: 0 };
        usage.set(keyId, counts);
      }
      if (isBilled(line)) counts.calls += 1;
      else counts.unbilled += 1;
    }
  }
  const keys = [...usage]
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([keyId, counts]) => ({ keyId, ...counts, amountCents: amountCents(counts.calls) }));
  return {
    month,
    keys,
    totalCalls: keys.reduce((sum, key) => sum + key.calls, 0),
    totalCents: keys.reduce((sum, key) => sum + key.amountCents, 0),
    evaluation: { ...evaluation, keys: evaluationKeys.size },
    files: files.map((path) => basename(path)),
    skippedLines,
  };
}
