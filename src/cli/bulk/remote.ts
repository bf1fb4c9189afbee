/**
 * `receiptd verify --remote`: the inputs go to the service in batches with the client
 * (`receiptd/client`), lines come back in input order. A module of its own, loaded only for
 * a remote run, so a local run does not carry the client and its HTTP stack.
 */
import { type BulkOutcome, ReceiptdClient, type ReceiptdError } from "../../client/index.js";
import { MAX_BUNDLE_BYTES } from "../../verifier/bundle/limits.js";
import { verifyBundleBytes } from "../../verifier/bundle/verify-document.js";
import type { BulkInput } from "./inputs.js";
import { addTally, emptyTally, failureLine, resultLine, type Tally } from "./lines.js";
import type { LineSink } from "./output.js";
import { type BulkRequest, earlyLine, type RunState } from "./run.js";

/** Remote lines are written in groups of this many (fewer writes, same order). */
const REMOTE_WRITE_LINES = 256;

interface RemoteItem {
  index: number;
  source: string;
  bytes: Buffer;
}

export async function runRemote(
  request: BulkRequest,
  inputs: AsyncGenerator<BulkInput>,
  sink: LineSink,
  state: RunState,
): Promise<void> {
  const client = new ReceiptdClient({
    baseUrl: request.remote as string,
    ...(request.key === null ? {} : { apiKey: request.key }),
    connections: Math.max(2, request.jobs ?? 4),
    userAgent: "receiptd-verify",
  });
  /** Lines of inputs that never went to the service, with their place in the order. */
  const early: { index: number; line: string; tally: Tally }[] = [];
  async function* toSend(): AsyncGenerator<RemoteItem> {
    let index = 0;
    for await (const input of inputs) {
      const at = index++;
      if ("bytes" in input) {
        yield { index: at, source: input.source, bytes: input.bytes };
        continue;
      }
      const tally = emptyTally();
      early.push({ index: at, line: earlyLine(input, tally) ?? "", tally });
    }
  }
  let text = "";
  let lines = 0;
  const tally = emptyTally();
  const write = async (force: boolean) => {
    if (text === "" || (!force && lines < REMOTE_WRITE_LINES)) return;
    await sink.write(text);
    state.done += lines;
    addTally(state.tally, tally);
    state.progress.update(state.done, state.tally);
    text = "";
    lines = 0;
    Object.assign(tally, emptyTally());
  };
  const takeEarly = (before: number) => {
    while (early.length > 0 && (early[0] as { index: number }).index < before) {
      const entry = early.shift() as { line: string; tally: Tally };
      text += entry.line;
      lines += 1;
      addTally(tally, entry.tally);
    }
  };
  const lineOf = (outcome: BulkOutcome<RemoteItem>): string => {
    const { source, bytes } = outcome.item;
    if (outcome.result !== null) return resultLine(source, outcome.result, request.full, tally);
    const error = outcome.error as ReceiptdError;
    if (error.code === "bundle_not_json") {
      // The verifier's own words for bytes that do not parse (what a local run says).
      const local = verifyBundleBytes(bytes, {
        universalNewlines: true,
        maxBytes: MAX_BUNDLE_BYTES,
      });
      return resultLine(source, local, request.full, tally);
    }
    return failureLine(source, `${error.code}: ${error.detail}`, tally);
  };
  try {
    for await (const outcome of client.verifyMany(toSend(), {
      bundleOf: (item) => item.bytes,
      concurrency: request.jobs ?? 4,
      requireAnchor: request.requireAnchor,
    })) {
      takeEarly(outcome.item.index);
      text += lineOf(outcome);
      lines += 1;
      await write(false);
    }
    takeEarly(Number.POSITIVE_INFINITY);
    await write(true);
  } catch (error) {
    // What was answered before the failure is kept, so `--resume` carries on from there.
    await write(true);
    throw error;
  } finally {
    await client.close();
  }
}
