/**
 * `timestampMillis` reads timestamps by hand; this pins it to the regex form it replaced
 * (`^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,3}))?Z$` with ASCII digits, then
 * the calendar checks) on generated and mutated timestamps: same value, or the same crash.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { TimestampCrash, timestampMillis } from "../../src/verifier/timestamps.js";

const ISO = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,3}))?Z$/;

/** The regex reading with `Date.UTC` for the instant: the oracle. */
function oracle(value: string): number | string {
  const m = ISO.exec(value);
  if (!m) return `crash: Invalid isoformat string`;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as number[];
  const last = new Date(Date.UTC(2000, month!, 0)).getUTCDate();
  const leap = year! % 4 === 0 && (year! % 100 !== 0 || year! % 400 === 0);
  const days = month === 2 ? (leap ? 29 : 28) : last;
  if (year! < 1) return `crash: year ${year} is out of range`;
  if (month! < 1 || month! > 12) return "crash: month must be in 1..12";
  if (day! < 1 || day! > days) return "crash: day is out of range for month";
  if (hour! > 23) return "crash: hour must be in 0..23";
  if (minute! > 59) return "crash: minute must be in 0..59";
  if (second! > 59) return "crash: second must be in 0..59";
  const date = new Date(0);
  date.setUTCFullYear(year!, month! - 1, day!);
  date.setUTCHours(hour!, minute!, second!, m[7] ? Number(m[7].padEnd(3, "0")) : 0);
  return date.getTime();
}

function ours(value: string): number | string {
  try {
    return timestampMillis(value);
  } catch (error) {
    if (!(error instanceof TimestampCrash)) throw error;
    return `crash: ${error.message.startsWith("Invalid isoformat") ? "Invalid isoformat string" : error.message}`;
  }
}

test("timestampMillis agrees with the regex reading on generated and mutated timestamps", () => {
  let seed = 7;
  const random = () => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed / 2147483648;
  };
  const pad = (n: number, w: number) => String(n).padStart(w, "0");
  const alphabet = "0123456789-T:.Z ٣x\n";
  let crashes = 0;
  let values = 0;
  for (let i = 0; i < 20_000; i++) {
    const fraction = ["", ".5", ".05", ".123", ".1234", "."][Math.floor(random() * 6)]!;
    let text = `${pad(Math.floor(random() * 10_000), 4)}-${pad(Math.floor(random() * 14), 2)}-${pad(
      Math.floor(random() * 33),
      2,
    )}T${pad(Math.floor(random() * 25), 2)}:${pad(Math.floor(random() * 61), 2)}:${pad(
      Math.floor(random() * 61),
      2,
    )}${fraction}Z`;
    if (random() < 0.3) {
      const at = Math.floor(random() * text.length);
      const ch = alphabet[Math.floor(random() * alphabet.length)]!;
      text =
        random() < 0.5
          ? text.slice(0, at) + ch + text.slice(at + 1)
          : text.slice(0, at) + ch + text.slice(at);
    }
    const expected = oracle(text);
    assert.deepEqual(ours(text), expected, text);
    if (typeof expected === "number") values++;
    else crashes++;
  }
  assert.ok(values > 1000 && crashes > 1000, `${values} values, ${crashes} crashes`);
  assert.equal(timestampMillis("2026-09-23T20:38:57.5Z"), Date.UTC(2026, 8, 23, 20, 38, 57, 500));
  assert.equal(timestampMillis("0001-01-01T00:00:00Z"), -62135596800000);
});
