/**
 * Where the lines go, and `--resume`. Lines are written in input order, so the lines of an
 * earlier run form a prefix of the inputs: resuming reads that prefix (streamed, a line at a
 * time), cuts off a torn last line (a kill -9 can stop a run between two writes, never inside
 * one, but a line without its `\n` is dropped all the same), and skips as many inputs. The
 * last line kept must name the input at its place, else `--out` belongs to other inputs.
 */
import { createReadStream } from "node:fs";
import { type FileHandle, open, stat, truncate } from "node:fs/promises";
import type { Writable } from "node:stream";
import { emptyTally, type Tally } from "./lines.js";

export interface ResumePoint {
  /** Whole lines already in the file: the inputs to skip. */
  lines: number;
  /** The source of the last of them (null when none). */
  lastSource: string | null;
  /** Their counts, for the summary and the exit status. */
  tally: Tally;
}

/** Reads what an earlier run wrote to `path` and cuts a torn tail; none when there is no file. */
export async function resumePoint(path: string): Promise<ResumePoint> {
  const point: ResumePoint = { lines: 0, lastSource: null, tally: emptyTally() };
  try {
    await stat(path);
  } catch {
    return point;
  }
  let kept = 0;
  let offset = 0;
  let partial: Buffer[] = [];
  const take = (line: Buffer): boolean => {
    let parsed: { source?: unknown; verdict?: unknown; error_codes?: unknown };
    try {
      parsed = JSON.parse(line.toString("utf8"));
    } catch {
      return false;
    }
    if (typeof parsed.source !== "string") return false;
    point.lines += 1;
    point.lastSource = parsed.source;
    if (typeof parsed.verdict === "string") {
      point.tally.verdicts[parsed.verdict] = (point.tally.verdicts[parsed.verdict] ?? 0) + 1;
      for (const code of Array.isArray(parsed.error_codes) ? parsed.error_codes : []) {
        point.tally.codes[String(code)] = (point.tally.codes[String(code)] ?? 0) + 1;
      }
    } else point.tally.unreadable += 1;
    return true;
  };
  let broken = false;
  for await (const chunk of createReadStream(path) as AsyncIterable<Buffer>) {
    if (broken) break;
    let start = 0;
    for (;;) {
      const end = chunk.indexOf(10, start);
      if (end === -1) break;
      const piece = chunk.subarray(start, end);
      const line = partial.length === 0 ? piece : Buffer.concat([...partial, piece]);
      partial = [];
      offset += line.length + 1;
      if (!take(line)) {
        // A line that does not parse ends what can be trusted: it and all after it go.
        broken = true;
        offset -= line.length + 1;
        break;
      }
      kept = offset;
      start = end + 1;
    }
    if (!broken && start < chunk.length) partial.push(Buffer.from(chunk.subarray(start)));
  }
  if ((await stat(path)).size !== kept) await truncate(path, kept);
  return point;
}

/** Writes text in order and waits when the destination is slow (no unbounded buffering). */
export interface LineSink {
  write(text: string): Promise<void>;
  close(): Promise<void>;
}

export async function fileSink(path: string, append: boolean): Promise<LineSink> {
  const handle: FileHandle = await open(path, append ? "a" : "w");
  return {
    // One write per call: whole lines, so a kill leaves whole lines behind.
    write: async (text) => {
      await handle.write(text);
    },
    close: () => handle.close(),
  };
}

export function streamSink(stream: Writable): LineSink {
  return {
    write: (text) =>
      new Promise<void>((resolve, reject) => {
        if (stream.write(text)) resolve();
        else {
          const onError = (error: Error) => reject(error);
          stream.once("error", onError);
          stream.once("drain", () => {
            stream.off("error", onError);
            resolve();
          });
        }
      }),
    close: async () => {},
  };
}
