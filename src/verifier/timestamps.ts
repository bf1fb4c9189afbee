/**
 * RFC 3339 UTC timestamps as the reference validates and compares them (verifier.md §3.1).
 *
 * Validation is Python's `re.match(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,3})?Z$")`:
 * `\d` is any Unicode decimal digit and `$` also matches before a final newline, and there is
 * no calendar check. Comparison parses with `datetime.fromisoformat`, which raises for what
 * the regex let through but is not a real instant; that is a reference crash (§11.3), reported
 * here as `TimestampCrash` so the verifier can answer with a structured result instead.
 */

import { CodedError } from "./coded-error.js";
import { reprString } from "./json/py-scalars.js";
import type { JsonValue } from "./json/value.js";

const PY_TIMESTAMP =
  /^\p{Nd}{4}-\p{Nd}{2}-\p{Nd}{2}T\p{Nd}{2}:\p{Nd}{2}:\p{Nd}{2}(\.\p{Nd}{1,3})?Z\n?$/u;

/** `validate_timestamp`: the regex test only. */
export function isValidTimestamp(value: JsonValue | undefined): value is string {
  return typeof value === "string" && PY_TIMESTAMP.test(value);
}

export type TimestampCrashCode = "timestamp_crash";

/** Raised where the reference's `datetime.fromisoformat` would raise; `message` is Python's. */
export class TimestampCrash extends CodedError<TimestampCrashCode> {
  override readonly name = "TimestampCrash";
  constructor(
    readonly timestamp: string,
    message = `Invalid isoformat string: ${reprString(timestamp.replace("Z", "+00:00"))}`,
  ) {
    super("timestamp_crash", message, { message });
  }
}

function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const mp = (month + 9) % 12;
  const doy = Math.floor((153 * mp + 2) / 5) + day - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}

const THIRTY_DAYS = new Set([4, 6, 9, 11]);

function daysInMonth(year: number, month: number): number {
  if (month === 2) return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
  return THIRTY_DAYS.has(month) ? 30 : 31;
}

/** The ASCII digits `value[from, from + count)` as a number, or -1 if one is not a digit. */
function digitsAt(value: string, from: number, count: number): number {
  let n = 0;
  for (let i = from; i < from + count; i++) {
    const d = value.charCodeAt(i) - 0x30;
    if (d < 0 || d > 9) return -1;
    n = n * 10 + d;
  }
  return n;
}

/**
 * The fields of `YYYY-MM-DDTHH:MM:SS[.f{1,3}]Z` (ASCII digits only, nothing after the Z), the
 * form `fromisoformat` reads, or null. Read by hand: this runs for every timestamp compared,
 * and a regex match with an array per call cost more than the rest of the comparison.
 */
function isoFields(value: string): [number, number, number, number, number, number, number] | null {
  const n = value.length;
  if (n < 20 || n > 24 || value.charCodeAt(n - 1) !== 0x5a) return null;
  if (
    value.charCodeAt(4) !== 0x2d ||
    value.charCodeAt(7) !== 0x2d ||
    value.charCodeAt(10) !== 0x54 ||
    value.charCodeAt(13) !== 0x3a ||
    value.charCodeAt(16) !== 0x3a
  ) {
    return null;
  }
  let fraction = 0;
  if (n > 20) {
    // `.` and one to three digits, scaled to milliseconds ("5" is 500, "05" is 50).
    if (n === 21 || value.charCodeAt(19) !== 0x2e) return null;
    fraction = digitsAt(value, 20, n - 21);
    if (fraction < 0) return null;
    fraction *= n === 22 ? 100 : n === 23 ? 10 : 1;
  }
  const fields: [number, number, number, number, number, number, number] = [
    digitsAt(value, 0, 4),
    digitsAt(value, 5, 2),
    digitsAt(value, 8, 2),
    digitsAt(value, 11, 2),
    digitsAt(value, 14, 2),
    digitsAt(value, 17, 2),
    fraction,
  ];
  return fields.includes(-1) ? null : fields;
}

/**
 * Milliseconds since the epoch for a timestamp that passed `isValidTimestamp`.
 * Throws `TimestampCrash` where Python's `fromisoformat` would raise.
 */
export function timestampMillis(value: string): number {
  const fields = isoFields(value);
  if (fields === null) throw new TimestampCrash(value);
  const [year, month, day, hour, minute, second, fraction] = fields;
  const problem =
    year < 1
      ? `year ${year} is out of range`
      : month < 1 || month > 12
        ? "month must be in 1..12"
        : day < 1 || day > daysInMonth(year, month)
          ? "day is out of range for month"
          : hour > 23
            ? "hour must be in 0..23"
            : minute > 59
              ? "minute must be in 0..59"
              : second > 59
                ? "second must be in 0..59"
                : null;
  if (problem !== null) throw new TimestampCrash(value, problem);
  return (
    ((daysFromCivil(year, month, day) * 24 + hour) * 60 + minute) * 60_000 +
    second * 1000 +
    fraction
  );
}

/**
 * General RFC 3339 `date-time` (memory crystals' `created_at`), beside the reference's
 * UTC-only form above so the project has one timestamp parser module: the two grammars
 * differ on purpose (offsets and nanoseconds here; Python's `fromisoformat` crashes above),
 * and they share the calendar.
 *
 * RFC 3339 `date-time`: `T`/`Z` in either case (RFC 3339 §5.6), a fraction of 1–9 digits,
 * `Z` or a numeric offset. Calendar and clock ranges are checked after matching.
 */
export const RFC3339_PATTERN =
  "^(\\d{4})-(\\d{2})-(\\d{2})[Tt](\\d{2}):(\\d{2}):(\\d{2})(?:\\.(\\d{1,9}))?(?:[Zz]|([+-])(\\d{2}):(\\d{2}))$";
const RFC3339 = new RegExp(RFC3339_PATTERN);

/** An instant as whole seconds since the epoch plus nanoseconds, for ordering. */
export interface Instant {
  seconds: number;
  nanos: number;
}

/**
 * The instant an RFC 3339 timestamp names, or null when it is not one (a real calendar date,
 * hours 0–23, minutes and seconds 0–59: leap seconds are refused; offsets up to ±23:59).
 */
export function rfc3339Instant(text: string): Instant | null {
  const match = RFC3339.exec(text);
  if (match === null) return null;
  const [year, month, day, hour, minute, second] = match.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const fraction = match[7] ?? "";
  const sign = match[8] === "-" ? -1 : 1;
  const offsetHours = Number(match[9] ?? 0);
  const offsetMinutes = Number(match[10] ?? 0);
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return null;
  if (hour > 23 || minute > 59 || second > 59 || offsetHours > 23 || offsetMinutes > 59) {
    return null;
  }
  // setUTCFullYear, unlike Date.UTC, does not read years 0–99 as 1900–1999.
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(hour, minute, second, 0);
  const offsetSeconds = sign * (offsetHours * 3600 + offsetMinutes * 60);
  return {
    seconds: date.getTime() / 1000 - offsetSeconds,
    nanos: Number(fraction.padEnd(9, "0")),
  };
}

/** Python's `datetime.isoformat()` of a UTC instant, as printed in `key_revoked` details. */
export function pyIsoformat(millis: number): string {
  const days = Math.floor(millis / 86_400_000);
  let rest = millis - days * 86_400_000;
  const z = days + 719468;
  const era = Math.floor(z / 146097);
  const doe = z - era * 146097;
  const yoe = Math.floor(
    (doe - Math.floor(doe / 1460) + Math.floor(doe / 36524) - Math.floor(doe / 146096)) / 365,
  );
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  const year = yoe + era * 400 + (month <= 2 ? 1 : 0);
  const hour = Math.floor(rest / 3_600_000);
  rest -= hour * 3_600_000;
  const minute = Math.floor(rest / 60_000);
  rest -= minute * 60_000;
  const second = Math.floor(rest / 1000);
  const ms = rest - second * 1000;
  const pad = (n: number, w = 2) => String(n).padStart(w, "0");
  const fraction = ms > 0 ? `.${pad(ms * 1000, 6)}` : "";
  return `${pad(year, 4)}-${pad(month)}-${pad(day)}T${pad(hour)}:${pad(minute)}:${pad(second)}${fraction}+00:00`;
}

/** `YYYY-MM-DDTHH:MM:SSZ` for now (or a given instant): the form the service writes. */
export function formatUtcSeconds(date: Date = new Date()): string {
  return `${date.toISOString().slice(0, 19)}Z`;
}
