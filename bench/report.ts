/**
 * Renders a BenchRun for people: an aligned text table for stdout, a markdown table for notes,
 * a self-contained SVG chart, and the files that keep all three next to the raw JSON.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { renderGoalMarkdown, renderGoalText } from "./goals.js";
import type { BenchRun, ScenarioResult } from "./types.js";

// A fixed locale, so the output (and the tests) do not depend on where the bench ran.
const wholeNumber = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });
const twoDecimals = new Intl.NumberFormat("en-US", {
  minimumFractionDigits: 2,
  maximumFractionDigits: 2,
});
const oneDecimal = new Intl.NumberFormat("en-US", {
  minimumFractionDigits: 1,
  maximumFractionDigits: 1,
});

/** Rates of a few per second (large batches) would all round to 1 or 2 without a decimal. */
function formatRate(value: number): string {
  return Math.abs(value) >= 100 ? wholeNumber.format(value) : oneDecimal.format(value);
}

const BYTES_PER_MIB = 2 ** 20;

/**
 * RSS is measured in MiB (`peakRssMiB`) but shown in MB (10^6 bytes), the unit the memory
 * goal is stated in, so the column and the goal can be compared without converting.
 */
function formatMB(mebibytes: number | null | undefined): string {
  return mebibytes === null || mebibytes === undefined
    ? "—"
    : wholeNumber.format((mebibytes * BYTES_PER_MIB) / 1e6);
}

const numberWords = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight"];

export function ceilingLine(run: BenchRun): string {
  const { implementation, threads, verificationsPerSecond, bundlesPerSecond, signaturesPerBundle } =
    run.ceiling;
  const perBundle = numberWords[signaturesPerBundle] ?? String(signaturesPerBundle);
  const openssl = run.opensslCeiling;
  return (
    `crypto ceiling${implementation === undefined ? "" : ` (${implementation})`}: ` +
    `${wholeNumber.format(verificationsPerSecond)} Ed25519 verifications/s` +
    ` on ${threads} thread${threads === 1 ? "" : "s"}` +
    ` = ${wholeNumber.format(bundlesPerSecond)} ${perBundle}-receipt bundles/s` +
    (openssl === undefined
      ? ""
      : `; OpenSSL: ${wholeNumber.format(openssl.verificationsPerSecond)}/s` +
        ` = ${wholeNumber.format(openssl.bundlesPerSecond)} bundles/s`)
  );
}

/** What the `vs previous` column divides by: throughput ratios need similar ceilings. */
export function previousLine(run: BenchRun): string[] {
  if (run.previous === undefined) return [];
  const { file, startedAt, ceilingBundlesPerSecond } = run.previous;
  return [
    `vs previous: items/s over ${file.split("/").at(-1)} (${startedAt}), whose ceiling was ` +
      `${wholeNumber.format(ceilingBundlesPerSecond)} bundles/s`,
  ];
}

function machineLine(run: BenchRun): string {
  const { cpus, cpuModel, memoryGiB, node, platform } = run.machine;
  return `machine: ${cpus} × ${cpuModel}, ${oneDecimal.format(memoryGiB)} GiB, node ${node}, ${platform}`;
}

/** A CLI run (the bulk scenarios) makes no requests: it has no latency to show. */
function latencyCell(result: ScenarioResult, milliseconds: number): string {
  return result.kind === "cli" ? "—" : oneDecimal.format(milliseconds);
}

interface Column {
  header: string;
  numeric: boolean;
  cell: (result: ScenarioResult) => string;
}

/** How many leading columns a skipped row still fills before its `skipped:` note. */
const IDENTITY_COLUMNS = 2;

function columnsFor(run: BenchRun): Column[] {
  const hasWorker = run.results.some((result) => result.workerPeakRssMiB !== undefined);
  return [
    { header: "scenario", numeric: false, cell: (r) => r.title },
    { header: "target", numeric: false, cell: (r) => r.target },
    { header: "conns", numeric: true, cell: (r) => wholeNumber.format(r.connections) },
    {
      header: "req/s",
      numeric: true,
      cell: (r) => (r.kind === "cli" ? "—" : formatRate(r.requestsPerSecond)),
    },
    {
      header: "items/s",
      numeric: true,
      cell: (r) => `${formatRate(r.itemsPerSecond)} ${r.unit}/s`,
    },
    { header: "p50 ms", numeric: true, cell: (r) => latencyCell(r, r.latencyMs.p50) },
    { header: "p95 ms", numeric: true, cell: (r) => latencyCell(r, r.latencyMs.p95) },
    { header: "p99 ms", numeric: true, cell: (r) => latencyCell(r, r.latencyMs.p99) },
    { header: "errors", numeric: true, cell: (r) => wholeNumber.format(r.errors) },
    {
      header: hasWorker ? "peak MB svc/worker" : "peak RSS MB",
      numeric: true,
      cell: (r) =>
        r.workerPeakRssMiB === undefined
          ? formatMB(r.peakRssMiB)
          : `${formatMB(r.peakRssMiB)} / ${formatMB(r.workerPeakRssMiB)}`,
    },
    {
      header: "CPU µs/item main+other+client",
      numeric: true,
      cell: (r) =>
        r.cpuMicrosPerItem
          ? [
              r.cpuMicrosPerItem.mainThread,
              r.cpuMicrosPerItem.otherThreads,
              r.cpuMicrosPerItem.client,
            ]
              .map((micros) => wholeNumber.format(micros))
              .join(" + ")
          : "—",
    },
    {
      header: "of ceiling",
      numeric: true,
      cell: (r) => (r.ceilingRatio === null ? "—" : `${oneDecimal.format(r.ceilingRatio * 100)}%`),
    },
    {
      header: "vs previous",
      numeric: true,
      cell: (r) =>
        r.vsPrevious?.itemsPerSecond == null
          ? "—"
          : `×${twoDecimals.format(r.vsPrevious.itemsPerSecond)}`,
    },
    {
      header: "goal",
      numeric: false,
      cell: (r) => (r.goal ? `${r.goal.met ? "✓" : "✗"} ${r.goal.description}` : ""),
    },
  ];
}

/** Error messages in skip reasons may span lines; a table row must not. */
function singleLine(text: string): string {
  return text.replace(/\s*[\r\n]+\s*/g, " ");
}

/** Cells of one row; a skipped row stops after its identity columns and the reason. */
function rowCells(columns: Column[], result: ScenarioResult): string[] {
  if (result.skipped !== undefined) {
    const identity = columns.slice(0, IDENTITY_COLUMNS).map((column) => column.cell(result));
    return [...identity, `skipped: ${result.skipped}`].map(singleLine);
  }
  return columns.map((column) => singleLine(column.cell(result)));
}

// Code points rather than UTF-16 units, so astral characters in titles count once.
const displayLength = (text: string): number => [...text].length;

export function renderTable(run: BenchRun): string {
  const columns = columnsFor(run);
  const header = columns.map((column) => column.header);
  const rows = run.results.map((result) => rowCells(columns, result));
  const isSkippedRow = (cells: string[]): boolean => cells.length < columns.length;
  const widths = columns.map((_, index) =>
    Math.max(
      ...[header, ...rows]
        // A skipped note overflows on purpose; it must not widen the column it starts in.
        .filter((cells) => !isSkippedRow(cells) || index < IDENTITY_COLUMNS)
        .map((cells) => displayLength(cells[index] ?? "")),
    ),
  );
  const line = (cells: string[]): string =>
    cells
      .map((cell, index) => {
        if (isSkippedRow(cells) && index === cells.length - 1) return cell;
        const padding = " ".repeat((widths[index] ?? 0) - displayLength(cell));
        return columns[index]?.numeric ? padding + cell : cell + padding;
      })
      .join("  ")
      .trimEnd();
  const rule = widths.map((width) => "-".repeat(width)).join("  ");
  return [
    machineLine(run),
    `started: ${run.startedAt}`,
    `mode: ${run.mode}`,
    `quick: ${run.quick ? "yes" : "no"}`,
    ceilingLine(run),
    ...previousLine(run),
    "",
    line(header),
    rule,
    ...rows.map(line),
    "",
    ...renderGoalText(run),
    "",
  ].join("\n");
}

export function renderMarkdownTable(run: BenchRun): string {
  const columns = columnsFor(run);
  // `|` would split the cell; the rest would turn a title into HTML, emphasis or code.
  const escapeCell = (text: string): string => text.replace(/[\\|<*_`]/g, "\\$&");
  const line = (cells: string[]): string => `| ${cells.map(escapeCell).join(" | ")} |`;
  const rows = run.results.map((result) => {
    const cells = rowCells(columns, result);
    return line([...cells, ...Array<string>(columns.length - cells.length).fill("")]);
  });
  return [
    `${machineLine(run)}; ${run.mode} mode${run.quick ? ", quick" : ""}; started ${run.startedAt}`,
    "",
    ceilingLine(run),
    ...previousLine(run),
    "",
    line(columns.map((column) => column.header)),
    `|${columns.map((column) => (column.numeric ? " ---: " : " --- ")).join("|")}|`,
    ...rows,
    "",
    ...renderGoalMarkdown(run),
    "",
  ].join("\n");
}

export function escapeXml(text: string): string {
  return (
    text
      // Characters XML 1.0 forbids outright; escaping cannot make them well-formed.
      .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/g, "")
      .replaceAll("&", "&amp;")
      .replaceAll("<", "&lt;")
      .replaceAll(">", "&gt;")
      .replaceAll('"', "&quot;")
      .replaceAll("'", "&apos;")
  );
}

const SVG_WIDTH = 960;
const PANEL_WIDTH = SVG_WIDTH / 2;
const MARGIN = 16;
// Room right of the longest bar for its value label.
const VALUE_LABEL_ROOM = 150;
const BAR_HEIGHT = 16;
const BAR_GAP = 4;
const TARGET_COLOURS = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#b07aa1"];
const MAX_REASON_LENGTH = 48;
const BAR_ROOM = PANEL_WIDTH - 2 * MARGIN - VALUE_LABEL_ROOM;

function truncate(text: string, limit: number): string {
  const characters = [...singleLine(text)];
  return characters.length <= limit
    ? characters.join("")
    : `${characters.slice(0, limit - 1).join("")}…`;
}

function svgText(x: number, y: number, content: string, attributes = ""): string {
  return `<text x="${x.toFixed(1)}" y="${y}"${attributes}>${escapeXml(content)}</text>`;
}

/** 1, 10, 100, 1k, …; 0.1, 0.01 below one. */
function decadeLabel(exponent: number): string {
  if (exponent < 0) return (10 ** exponent).toFixed(-exponent);
  if (exponent < 3) return String(10 ** exponent);
  if (exponent < 6) return `${10 ** (exponent - 3)}k`;
  return `${10 ** (exponent - 6)}M`;
}

/**
 * A logarithmic axis over whole decades, from a decade below the smallest value (so the
 * shortest bar is at least a decade long) to the one at or above the largest. Rates of different units
 * (bundles/s, requests/s, receipts/s) and latencies from a millisecond to seconds then stay
 * readable side by side: one slow bar no longer flattens the rest, and each bar is labelled
 * with its value and unit.
 */
export interface LogAxis {
  /** Exponents of the decades drawn as grid lines, low to high. */
  decades: number[];
  /** Bar length for `value`; 0 for values the axis cannot show (zero, negative, not finite). */
  length(value: number): number;
}

export function logAxis(values: readonly number[], room: number): LogAxis {
  const shown = values.filter((value) => Number.isFinite(value) && value > 0);
  if (shown.length === 0) return { decades: [], length: () => 0 };
  const low = Math.floor(Math.log10(Math.min(...shown))) - 1;
  const high = Math.max(low + 1, Math.ceil(Math.log10(Math.max(...shown))));
  const decades = Array.from({ length: high - low + 1 }, (_, index) => low + index);
  return {
    decades,
    length: (value) =>
      Number.isFinite(value) && value > 0
        ? Math.max(0, (room * (Math.log10(value) - low)) / (high - low))
        : 0,
  };
}

export function renderSvg(run: BenchRun): string {
  const targets = [...new Set(run.results.map((result) => result.target))];
  const colourOf = (target: string): string =>
    TARGET_COLOURS[targets.indexOf(target) % TARGET_COLOURS.length] ?? "#888888";
  // Grouped by scenario id in first-seen order, even if a caller interleaves targets.
  const groups = new Map<string, ScenarioResult[]>();
  for (const result of run.results) {
    groups.set(result.scenario, [...(groups.get(result.scenario) ?? []), result]);
  }
  const measured = run.results.filter((result) => result.skipped === undefined);
  const hasLatency = (result: ScenarioResult) => result.kind !== "cli";
  const panels = [
    {
      heading: "throughput, log scale (each bar in its unit/s)",
      value: (r: ScenarioResult) => r.itemsPerSecond,
      label: (r: ScenarioResult) => `${formatRate(r.itemsPerSecond)} ${r.unit}/s`,
    },
    {
      heading: "p99 latency (ms), log scale",
      // A CLI run has no latency: no bar, a dash (its zero would also stretch the axis).
      value: (r: ScenarioResult) => (hasLatency(r) ? r.latencyMs.p99 : 0),
      label: (r: ScenarioResult) =>
        hasLatency(r) ? `${oneDecimal.format(r.latencyMs.p99)} ms` : "—",
    },
  ].map((panel, index) => ({
    ...panel,
    left: index * PANEL_WIDTH + MARGIN,
    axis: logAxis(measured.map(panel.value), BAR_ROOM),
  }));

  const header: string[] = [
    svgText(
      MARGIN,
      28,
      `receiptd bench — ${run.startedAt} — ${run.mode}${run.quick ? " (quick)" : ""}`,
      ' class="title"',
    ),
    svgText(MARGIN, 48, machineLine(run), ' class="note"'),
    svgText(MARGIN, 66, ceilingLine(run), ' class="note"'),
  ];
  let legendX = MARGIN;
  for (const target of targets) {
    header.push(
      `<rect class="swatch" x="${legendX}" y="78" width="12" height="12" fill="${colourOf(target)}"/>`,
      svgText(legendX + 16, 89, target, ' class="label"'),
    );
    legendX += 16 + 7 * displayLength(target) + 24;
  }
  for (const panel of panels) {
    header.push(svgText(panel.left, 118, panel.heading, ' class="heading"'));
  }

  const AXIS_Y = 134;
  const rows: string[] = [];
  let y = AXIS_Y + 2;
  for (const results of groups.values()) {
    y += 16;
    rows.push(svgText(MARGIN, y, results[0]?.title ?? "", ' class="group"'));
    y += 6;
    for (const result of results) {
      const textY = y + BAR_HEIGHT - 4;
      if (result.skipped !== undefined) {
        const note = `${result.target} skipped: ${truncate(result.skipped, MAX_REASON_LENGTH)}`;
        rows.push(
          svgText(panels[0]!.left, textY, note, ' class="skipped"'),
          svgText(panels[1]!.left, textY, "skipped", ' class="skipped"'),
        );
      } else {
        for (const panel of panels) {
          const width = panel.axis.length(panel.value(result));
          rows.push(
            `<rect class="bar" x="${panel.left}" y="${y}" width="${width.toFixed(1)}" height="${BAR_HEIGHT}" fill="${colourOf(result.target)}"><title>${escapeXml(`${result.target}: ${panel.label(result)}`)}</title></rect>`,
            svgText(panel.left + width + 6, textY, panel.label(result), ' class="label"'),
          );
        }
      }
      y += BAR_HEIGHT + BAR_GAP;
    }
    y += 8;
  }
  const height = y + MARGIN;

  // Drawn before the bars, so the bars lie over the grid.
  const grid: string[] = [];
  for (const panel of panels) {
    const { decades } = panel.axis;
    decades.forEach((exponent, index) => {
      const x = panel.left + (BAR_ROOM * index) / Math.max(1, decades.length - 1);
      grid.push(
        `<line class="grid" x1="${x.toFixed(1)}" y1="${AXIS_Y + 4}" x2="${x.toFixed(1)}" y2="${y}" stroke="#dddddd"/>`,
        svgText(x, AXIS_Y, decadeLabel(exponent), ' class="tick" text-anchor="middle"'),
      );
    });
  }

  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<svg xmlns="http://www.w3.org/2000/svg" width="${SVG_WIDTH}" height="${height}" viewBox="0 0 ${SVG_WIDTH} ${height}" role="img">`,
    // Read out by screen readers, and shown as the document's name by viewers.
    `<title>${escapeXml(`receiptd bench ${run.startedAt} (${run.mode}): throughput and p99 per scenario`)}</title>`,
    // Generic families only, so the file needs nothing from the network.
    "<style>text{font-family:system-ui,sans-serif;fill:#222222}.title{font-size:16px;font-weight:bold}.heading,.group{font-size:13px;font-weight:bold}.note,.label{font-size:12px}.tick{font-size:10px;fill:#777777}.skipped{font-size:12px;fill:#999999;font-style:italic}</style>",
    `<rect class="background" width="${SVG_WIDTH}" height="${height}" fill="#ffffff"/>`,
    ...header,
    ...grid,
    ...rows,
    "</svg>",
    "",
  ].join("\n");
}

export function writeReport(
  run: BenchRun,
  directory: string,
): { json: string; svg: string; markdown: string } {
  mkdirSync(directory, { recursive: true });
  const stamp = run.startedAt.replace(/[:.]/g, "-");
  const contents = {
    json: `${JSON.stringify(run, null, 2)}\n`,
    svg: renderSvg(run),
    md: renderMarkdownTable(run),
  };
  for (const [extension, content] of Object.entries(contents)) {
    writeFileSync(join(directory, `bench-${stamp}.${extension}`), content);
    // latest.* lets notes and dashboards link one stable name.
    writeFileSync(join(directory, `latest.${extension}`), content);
  }
  return {
    json: join(directory, `bench-${stamp}.json`),
    svg: join(directory, `bench-${stamp}.svg`),
    markdown: join(directory, `bench-${stamp}.md`),
  };
}
