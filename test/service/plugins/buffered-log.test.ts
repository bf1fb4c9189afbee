/**
 * The service's buffered standard output (plugins/logging.ts): lines arrive whole and in
 * order, within the flush interval while the process runs, and all of them when it exits,
 * also when it exits by a crash.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";

const LOGGING = fileURLToPath(new URL("../../../src/service/plugins/logging.ts", import.meta.url));

/** Runs `body` in a child process with `log = bufferedStdout()`; collects its stdout. */
function child(body: string, onLine?: (line: string, kill: () => void) => void) {
  const script = `import { bufferedStdout } from ${JSON.stringify(LOGGING)};\nconst log = bufferedStdout();\n${body}`;
  const proc = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  proc.stdout.setEncoding("utf8");
  proc.stdout.on("data", (chunk: string) => {
    out += chunk;
    if (onLine)
      for (const line of chunk.split("\n").filter(Boolean)) onLine(line, () => proc.kill());
  });
  return new Promise<{ out: string; code: number | null }>((resolve) =>
    proc.on("close", (code) => resolve({ out, code })),
  );
}

describe("bufferedStdout", () => {
  test("every line, whole and in order, when the process exits", async () => {
    const { out, code } = await child(
      'const pad = "x".repeat(40); for (let n = 0; n < 5000; n++) log.write(JSON.stringify({ n, pad }) + "\\n");',
    );
    assert.equal(code, 0);
    const lines = out.split("\n").filter(Boolean);
    assert.equal(lines.length, 5000);
    for (const [i, line] of lines.entries()) assert.equal(JSON.parse(line).n, i);
  });

  test("a crash that exits still writes what was buffered", async () => {
    const { out, code } = await child(
      'log.write("before the crash\\n"); setTimeout(() => { throw new Error("boom"); }, 10);',
    );
    assert.equal(code, 1);
    assert.equal(out, "before the crash\n");
  });

  test("a lone line reaches the output while the process keeps running", async () => {
    let seen = "";
    const { code } = await child(
      'log.write("soon\\n"); setInterval(() => {}, 1000);',
      (line, kill) => {
        seen = line;
        kill();
      },
    );
    assert.equal(seen, "soon");
    assert.notEqual(code, 0, "the child was still running when the line arrived");
  });
});
