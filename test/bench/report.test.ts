import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import {
  escapeXml,
  logAxis,
  renderMarkdownTable,
  renderSvg,
  renderTable,
  writeReport,
} from "../../bench/report.js";
import type { BenchRun, ScenarioResult } from "../../bench/types.js";

function result(overrides: Partial<ScenarioResult>): ScenarioResult {
  return {
    scenario: "single",
    title: "single bundle",
    target: "receiptd",
    connections: 16,
    requests: 64_500,
    errors: 0,
    seconds: 30,
    requestsPerSecond: 2150,
    unit: "bundles",
    itemsPerSecond: 2150,
    latencyMs: { p50: 6.04, p95: 9.87, p99: 12.345, max: 40 },
    peakRssMiB: 180,
    ceilingRatio: 0.7,
    ...overrides,
  };
}

const awkwardTitle = '50-bundle <batch> & "more"';
const skipReason = "target has no batch endpoint";

const run: BenchRun = {
  startedAt: "2026-03-01T12:34:56.789Z",
  quick: false,
  mode: "distributed",
  machine: {
    cpus: 2,
    cpuModel: "AMD EPYC 7763 64-Core Processor",
    node: "v20.19.0",
    platform: "linux",
    memoryGiB: 7.75,
  },
  ceiling: {
    threads: 2,
    verificationsPerSecond: 18_432,
    bundlesPerSecond: 3072,
    signaturesPerBundle: 6,
  },
  results: [
    result({
      goal: { description: "≥ 2,000 bundles/s", met: true },
      cpuMicrosPerItem: { mainThread: 120.4, otherThreads: 1609.6, client: 55 },
    }),
    result({
      target: "staging",
      requestsPerSecond: 1480.4,
      itemsPerSecond: 1480.4,
      latencyMs: { p50: 8.1, p95: 15.55, p99: 21.04, max: 60 },
      ceilingRatio: null,
      peakRssMiB: null,
      goal: { description: "≥ 2,000 bundles/s", met: false },
    }),
    result({
      scenario: "batch-50",
      title: awkwardTitle,
      connections: 4,
      requestsPerSecond: 51.26,
      itemsPerSecond: 2563,
      latencyMs: { p50: 70.2, p95: 88.8, p99: 101.96, max: 130 },
      peakRssMiB: 212,
      workerPeakRssMiB: 95,
      ceilingRatio: 0.834,
    }),
    result({
      scenario: "batch-50",
      title: awkwardTitle,
      target: "staging",
      skipped: skipReason,
      connections: 0,
      requests: 0,
      seconds: 0,
      requestsPerSecond: 0,
      itemsPerSecond: 0,
      latencyMs: { p50: 0, p95: 0, p99: 0, max: 0 },
      peakRssMiB: null,
      ceilingRatio: null,
    }),
    result({
      scenario: "health",
      title: "health check",
      unit: "requests",
      requestsPerSecond: 12_900,
      itemsPerSecond: 12_900,
      errors: 1234,
      latencyMs: { p50: 1.1, p95: 2.2, p99: 3.3, max: 5 },
      ceilingRatio: null,
    }),
    result({
      scenario: "health",
      title: "health check",
      target: "staging",
      unit: "requests",
      requestsPerSecond: 9_050,
      itemsPerSecond: 9_050,
      latencyMs: { p50: 1.4, p95: 2.6, p99: 4.75, max: 9 },
      ceilingRatio: null,
    }),
  ],
};

const measured = run.results.filter((r) => r.skipped === undefined);

/**
 * A small well-formedness check: one root element, every start tag closed in order, attribute
 * values quoted, and text holding no raw `<`, `>` or bare `&`.
 */
function assertWellFormedXml(document: string): void {
  const body = document.replace(/^<\?xml [^?]*\?>\s*/, "");
  const token = /<(\/?)([A-Za-z][\w:.-]*)((?:\s+[\w:.-]+="[^"<>]*")*)\s*(\/?)>/y;
  const entityOrText = /^(?:[^<>&]|&(?:amp|lt|gt|quot|apos|#\d+|#x[0-9a-fA-F]+);)*$/;
  const open: string[] = [];
  let roots = 0;
  let position = 0;
  while (position < body.length) {
    const next = body.indexOf("<", position);
    const text = body.slice(position, next === -1 ? body.length : next);
    assert.match(text, entityOrText, `bad character data at ${position}: ${text.slice(0, 40)}`);
    if (open.length === 0) assert.equal(text.trim(), "", "text outside the root element");
    if (next === -1) break;
    token.lastIndex = next;
    const match = token.exec(body);
    assert.ok(match, `malformed tag at ${next}: ${body.slice(next, next + 60)}`);
    const [whole, closing, name, , selfClosing] = match;
    if (closing) {
      assert.equal(open.pop(), name, `</${name}> closes the wrong element`);
    } else {
      if (open.length === 0) roots += 1;
      if (!selfClosing) open.push(name!);
    }
    position = next + whole.length;
  }
  assert.deepEqual(open, [], "unclosed elements");
  assert.equal(roots, 1, "exactly one root element");
}

describe("assertWellFormedXml", () => {
  test("rejects the mistakes it exists to catch", () => {
    assert.throws(() => assertWellFormedXml("<svg><g></svg>"));
    assert.throws(() => assertWellFormedXml("<svg><text>a < b</text></svg>"));
    assert.throws(() => assertWellFormedXml("<svg><text>a & b</text></svg>"));
    assert.throws(() => assertWellFormedXml('<svg><text x="1>a</text></svg>'));
    assert.throws(() => assertWellFormedXml("<svg/><svg/>"));
    assertWellFormedXml('<?xml version="1.0"?>\n<svg a="1"><g/><text>a &amp; b</text></svg>\n');
  });
});

describe("renderTable", () => {
  const table = renderTable(run);
  // The scenario table: issue 33's goal table follows it (goals.test.ts).
  const lines = table.split("\n").slice(
    0,
    table.split("\n").findIndex((line) => line.startsWith("goals")),
  );

  test("header lines describe machine, mode, quick flag and the crypto ceiling", () => {
    assert.match(table, /2 × AMD EPYC 7763 64-Core Processor/);
    assert.match(table, /node v20\.19\.0/);
    assert.match(table, /linux/);
    assert.match(table, /^mode: distributed$/m);
    assert.match(table, /^quick: no$/m);
    assert.ok(
      lines.includes(
        "crypto ceiling: 18,432 Ed25519 verifications/s on 2 threads = 3,072 six-receipt bundles/s",
      ),
    );
  });

  test("the libsodium ceiling is named, with OpenSSL's beside it", () => {
    const both = renderTable({
      ...run,
      ceiling: { ...run.ceiling, implementation: "libsodium" },
      opensslCeiling: {
        implementation: "openssl",
        threads: 2,
        verificationsPerSecond: 9_216,
        bundlesPerSecond: 1536,
        signaturesPerBundle: 6,
      },
    });
    assert.ok(
      both
        .split("\n")
        .includes(
          "crypto ceiling (libsodium): 18,432 Ed25519 verifications/s on 2 threads = 3,072 six-receipt bundles/s; OpenSSL: 9,216/s = 1,536 bundles/s",
        ),
    );
  });

  test("rows keep the given order and show formatted figures", () => {
    const titleLines = lines.filter((line) => /^(single bundle|50-bundle|health check)/.test(line));
    assert.equal(titleLines.length, run.results.length);
    assert.deepEqual(
      titleLines.map((line) => `${line.split(/\s{2,}/)[0]}/${line.split(/\s{2,}/)[1]}`),
      run.results.map((r) => `${r.title}/${r.target}`),
    );
    const [single, singleStaging, batch, batchStaging, health] = titleLines;
    assert.match(single!, /2,150 bundles\/s/);
    assert.match(single!, / 6\.0 +9\.9 +12\.3 /);
    assert.match(single!, /70\.0%/);
    assert.match(single!, / 120 \+ 1,610 \+ 55 /, "CPU µs per item: main, other threads, client");
    assert.match(single!, /✓ ≥ 2,000 bundles\/s$/);
    assert.match(singleStaging!, /1,480 bundles\/s/);
    assert.match(singleStaging!, /✗ ≥ 2,000 bundles\/s$/);
    assert.match(singleStaging!, / — +— +✗/, "unknown RSS and null ratio both show —");
    assert.match(batch!, / 51\.3 +2,563 bundles\/s/, "slow request rates keep a decimal");
    assert.match(batch!, /222 \/ 100/, "RSS in MB: 212 MiB and 95 MiB");
    assert.match(batch!, /83\.4%/);
    assert.match(batchStaging!, new RegExp(`staging +skipped: ${skipReason}$`));
    assert.doesNotMatch(batchStaging!, /bundles\/s|%/);
    assert.match(health!, /12,900 requests\/s/);
    assert.match(health!, / 1,234 /);
  });

  test("columns line up with their headers", () => {
    const header = lines.find((line) => line.startsWith("scenario"))!;
    const p99End = header.indexOf("p99 ms") + "p99 ms".length;
    assert.match(header, /peak MB svc\/worker/);
    for (const r of run.results) {
      const row = lines.find((line) => line.startsWith(r.title) && line.includes(` ${r.target} `))!;
      assert.equal(row.indexOf(` ${r.target} `) + 1, header.indexOf("target"), r.target);
      if (r.skipped !== undefined) continue;
      const p99 = ` ${r.latencyMs.p99.toFixed(1)} `;
      assert.equal(row.indexOf(p99) + p99.length - 1, p99End, `${r.title} p99`);
    }
  });
});

describe("renderMarkdownTable", () => {
  const markdown = renderMarkdownTable(run);
  const tableLines = markdown
    .slice(0, markdown.indexOf("Issue 33's goals"))
    .split("\n")
    .filter((line) => line.startsWith("|"));
  const cellsOf = (line: string): string[] => line.split(/(?<!\\)\|/).slice(1, -1);

  test("ceiling line above a header, separator and one row per result", () => {
    const ceiling = markdown.indexOf("crypto ceiling: 18,432 Ed25519 verifications/s");
    assert.ok(ceiling >= 0 && ceiling < markdown.indexOf("| scenario |"));
    assert.match(tableLines[0]!, /^\| scenario \| target \|/);
    assert.match(tableLines[1]!, /^\|(?: ---:? \|)+$/);
    assert.equal(tableLines.length - 2, run.results.length);
    const width = cellsOf(tableLines[0]!).length;
    for (const line of tableLines) assert.equal(cellsOf(line).length, width, line);
  });

  test("rows carry the same figures as the text table", () => {
    const rows = tableLines.slice(2);
    assert.match(rows[0]!, /\| 2,150 bundles\/s \|/);
    assert.match(rows[0]!, /\| ✓ ≥ 2,000 bundles\/s \|$/);
    assert.match(rows[1]!, /\| — \| ✗ ≥ 2,000 bundles\/s \|$/);
    assert.match(rows[2]!, /\| 222 \/ 100 \|/);
    assert.match(rows[3]!, new RegExp(`\\| skipped: ${skipReason} \\|`));
    assert.ok(rows[2]!.startsWith('| 50-bundle \\<batch> & "more" |'), "markup escaped");
  });
});

describe("renderSvg", () => {
  const svg = renderSvg(run);

  test("is a well-formed, self-contained SVG document", () => {
    assertWellFormedXml(svg);
    assert.match(svg, /<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg" width="960" /);
    assert.doesNotMatch(svg, /<script|href=|url\(|@import/);
  });

  test("draws one bar per measured result in each panel", () => {
    const bars = svg.match(/<rect class="bar"/g) ?? [];
    assert.equal(bars.length, 2 * measured.length);
    assert.match(svg, />throughput, log scale \(each bar in its unit\/s\)</);
    assert.match(svg, />p99 latency \(ms\), log scale</);
    assert.match(svg, />2,150 bundles\/s</);
    assert.match(svg, />12\.3 ms</);
    assert.match(svg, />12,900 requests\/s</);
  });

  /** Bar widths by panel (left edge), in document order. */
  const barWidths = (document: string): Map<number, number[]> => {
    const panels = new Map<number, number[]>();
    for (const [, x, width] of document.matchAll(
      /<rect class="bar" x="(\d+)" y="\d+" width="([\d.]+)"/g,
    )) {
      panels.set(Number(x), [...(panels.get(Number(x)) ?? []), Number(width)]);
    }
    return panels;
  };

  test("both panels are logarithmic: equal ratios make equal steps", () => {
    const [throughput, latency] = [...barWidths(svg).values()];
    assert.equal(throughput?.length, measured.length);
    for (const [widths, values] of [
      [throughput!, measured.map((r) => r.itemsPerSecond)],
      [latency!, measured.map((r) => r.latencyMs.p99)],
    ] as const) {
      const low = values.indexOf(Math.min(...values));
      const high = values.indexOf(Math.max(...values));
      const perDecade = (widths[high]! - widths[low]!) / Math.log10(values[high]! / values[low]!);
      assert.ok(perDecade > 0);
      // Every bar sits where its logarithm puts it (to the 0.1 px the SVG keeps).
      values.forEach((value, index) => {
        const expected = widths[low]! + perDecade * Math.log10(value / values[low]!);
        assert.ok(Math.abs(widths[index]! - expected) < 0.2, `${value}: ${widths[index]}`);
      });
    }
  });

  test("a 3.9 s bar does not flatten the millisecond ones", () => {
    const slow = renderSvg({
      ...run,
      results: [
        result({ latencyMs: { p50: 1, p95: 1, p99: 1.2, max: 2 } }),
        result({
          scenario: "large",
          title: "large",
          latencyMs: { p50: 1, p95: 1, p99: 3_900, max: 4_000 },
        }),
      ],
    });
    assertWellFormedXml(slow);
    const [, latency] = [...barWidths(slow).values()];
    const [fast, slowest] = latency!;
    // Linear, 1.2 ms next to 3,900 ms would be 0.03% of its length.
    assert.ok(fast! > slowest! / 10, `${fast} vs ${slowest}`);
    assert.match(slow, />3,900\.0 ms</);
  });

  test("decade grid lines are labelled", () => {
    const ticks = [...svg.matchAll(/<text [^>]*class="tick"[^>]*>([^<]+)</g)].map(([, t]) => t);
    // Throughput 1,480–12,900 items/s: 100 to 100k; p99 3.3–102 ms: 0.1 to 1k.
    assert.deepEqual(ticks, ["100", "1k", "10k", "100k", "0.1", "1", "10", "100", "1k"]);
    assert.equal((svg.match(/<line class="grid"/g) ?? []).length, ticks.length);
  });

  test("one fill per target, shown in the legend", () => {
    const fills = (target: string): Set<string> =>
      new Set(
        [...svg.matchAll(/<rect class="bar"[^>]* fill="([^"]+)"><title>([^:]+):/g)]
          .filter(([, , title]) => title === target)
          .map(([, fill]) => fill!),
      );
    const [receiptd] = [...fills("receiptd")];
    const [staging] = [...fills("staging")];
    assert.equal(fills("receiptd").size, 1);
    assert.equal(fills("staging").size, 1);
    assert.notEqual(receiptd, staging);
    assert.match(
      svg,
      new RegExp(`class="swatch"[^>]*fill="${receiptd}"/>\\s*<text[^>]*>receiptd<`),
    );
    assert.match(svg, new RegExp(`class="swatch"[^>]*fill="${staging}"/>\\s*<text[^>]*>staging<`));
  });

  test("groups are labelled, skipped results say so, and text is escaped", () => {
    assert.ok(svg.includes(`>${escapeXml(awkwardTitle)}<`));
    assert.ok(svg.includes("50-bundle &lt;batch&gt; &amp; &quot;more&quot;"));
    assert.ok(!svg.includes("<batch>"));
    assert.match(svg, /class="skipped"[^>]*>staging skipped: target has no batch endpoint</);
    assert.equal((svg.match(/class="skipped"/g) ?? []).length, 2);
    assert.ok(svg.indexOf(">single bundle<") < svg.indexOf(">health check<"));
  });

  test("grows with the number of scenarios", () => {
    const height = (document: string): number =>
      Number(/<svg [^>]*height="(\d+)"/.exec(document)?.[1]);
    const smaller = renderSvg({ ...run, results: run.results.slice(0, 2) });
    assertWellFormedXml(smaller);
    assert.ok(height(smaller) < height(svg));
  });

  test("survives hostile text and empty runs", () => {
    const hostile = renderSvg({
      ...run,
      results: [result({ title: "a]]><!--\u0001", target: "<x>", skipped: "boom\n<&>" })],
    });
    assertWellFormedXml(hostile);
    assertWellFormedXml(renderSvg({ ...run, results: [] }));
  });
});

describe("logAxis", () => {
  test("spans whole decades around the values", () => {
    const axis = logAxis([150, 2_000, 35], 400);
    assert.deepEqual(axis.decades, [0, 1, 2, 3, 4]);
    assert.equal(axis.length(1), 0);
    assert.equal(axis.length(10_000), 400);
    assert.equal(axis.length(100), 200);
  });

  test("the shortest bar is at least a decade long, even on a power of ten", () => {
    const axis = logAxis([100, 1_000], 200);
    assert.deepEqual(axis.decades, [1, 2, 3]);
    assert.equal(axis.length(100), 100);
    assert.equal(axis.length(1_000), 200);
  });

  test("one value, fractions, and values a log axis cannot show", () => {
    const single = logAxis([0.25], 100);
    assert.deepEqual(single.decades, [-2, -1, 0]);
    assert.ok(single.length(0.25) > 0);
    for (const value of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
      assert.equal(single.length(value), 0);
    }
    const empty = logAxis([0, Number.NaN], 100);
    assert.deepEqual(empty.decades, []);
    assert.equal(empty.length(5), 0);
  });
});

describe("writeReport", () => {
  test("writes stamped and latest copies of json, svg and markdown", () => {
    const root = mkdtempSync(join(tmpdir(), "bench-report-"));
    try {
      const directory = join(root, "nested", "results");
      const paths = writeReport(run, directory);
      const stamp = "bench-2026-03-01T12-34-56-789Z";
      assert.deepEqual(paths, {
        json: join(directory, `${stamp}.json`),
        svg: join(directory, `${stamp}.svg`),
        markdown: join(directory, `${stamp}.md`),
      });
      assert.deepEqual(readdirSync(directory).sort(), [
        `${stamp}.json`,
        `${stamp}.md`,
        `${stamp}.svg`,
        "latest.json",
        "latest.md",
        "latest.svg",
      ]);
      const json = readFileSync(paths.json, "utf8");
      assert.ok(json.endsWith("}\n"));
      assert.deepEqual(JSON.parse(json), run);
      assert.equal(readFileSync(paths.svg, "utf8"), renderSvg(run));
      assert.equal(readFileSync(paths.markdown, "utf8"), renderMarkdownTable(run));
      for (const extension of ["json", "svg", "md"]) {
        assert.equal(
          readFileSync(join(directory, `latest.${extension}`), "utf8"),
          readFileSync(join(directory, `${stamp}.${extension}`), "utf8"),
        );
      }
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe("a bulk scenario's row (a CLI run, no requests)", () => {
  const cliRun: BenchRun = {
    ...run,
    results: [
      result({}),
      result({
        scenario: "bulk-local",
        title: "receiptd verify --ndjson, 20,000 bundles",
        target: "receiptd verify (CLI)",
        kind: "cli",
        connections: 2,
        requestsPerSecond: 512.4,
        itemsPerSecond: 512.4,
        latencyMs: { p50: 0, p95: 0, p99: 0, max: 0 },
        peakRssMiB: 110,
        reference: { description: "the library on every core", itemsPerSecond: 530 },
        goal: { description: "≥ 85% of the library's 530/s: 96.7%", met: true },
      }),
    ],
  };

  test("shows its rate, RSS and goal with the ratio, and a dash for latency and req/s", () => {
    const row = renderTable(cliRun)
      .split("\n")
      .find((line) => line.startsWith("receiptd verify --ndjson"));
    assert.ok(row);
    assert.match(row, / — +512 bundles\/s +— +— +— +0 +115 /);
    assert.match(row, /✓ ≥ 85% of the library's 530\/s: 96\.7%$/);
  });

  test("draws its throughput bar; its latency bar is empty and labelled —", () => {
    const svg = renderSvg(cliRun);
    assert.equal((svg.match(/<rect class="bar"/g) ?? []).length, 2 * 2);
    assert.match(svg, />512 bundles\/s</);
    assert.match(
      svg,
      /<rect class="bar" x="496" y="\d+" width="0\.0"[^>]*><title>receiptd verify \(CLI\): —<\/title>/,
    );
  });
});
