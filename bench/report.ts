/**
 * Renders a BenchRun for people: an aligned text table for stdout, a markdown table for notes,
 * a self-contained SVG chart, and the files that keep all three next to the raw JSON.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { BenchRun, ScenarioResult } from "./types.js";

// A fixed locale, so the output (and the tests) do not depend on where the bench ran.
const wholeNumber = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });
const oneDecimal = new Intl.NumberFormat("en-US", {
  minimumFractionDigits: 1,
  maximumFractionDigits: 1,
});

/** Rates of a few per second (large batches) would all round to 1 or 2 without a decimal. */
function formatRate(value: number): string {
  return Math.abs(value) >= 100 ? wholeNumber.format(value) : oneDecimal.format(value);
}

function formatMiB(value: number | null | undefined): string {
  return value === null || value === undefined ? "—" : wholeNumber.format(value);
}

const numberWords = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight"];

export function ceilingLine(run: BenchRun): string {
  const { threads, verificationsPerSecond, bundlesPerSecond, signaturesPerBundle } = run.ceiling;
  const perBundle = numberWords[signaturesPerBundle] ?? String(signaturesPerBundle);
  return (
    `crypto ceiling: ${wholeNumber.format(verificationsPerSecond)} Ed25519 verifications/s` +
    ` on ${threads} thread${threads === 1 ? "" : "s"}` +
    ` = ${wholeNumber.format(bundlesPerSecond)} ${perBundle}-receipt bundles/s`
  );
}

function machineLine(run: BenchRun): string {
  const { cpus, cpuModel, memoryGiB, node, platform } = run.machine;
  return `machine: ${cpus} × ${cpuModel}, ${oneDecimal.format(memoryGiB)} GiB, node ${node}, ${platform}`;
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
    { header: "req/s", numeric: true, cell: (r) => formatRate(r.requestsPerSecond) },
    {
      header: "items/s",
      numeric: true,
      cell: (r) => `${formatRate(r.itemsPerSecond)} ${r.unit}/s`,
    },
    { header: "p50 ms", numeric: true, cell: (r) => oneDecimal.format(r.latencyMs.p50) },
    { header: "p95 ms", numeric: true, cell: (r) => oneDecimal.format(r.latencyMs.p95) },
    { header: "p99 ms", numeric: true, cell: (r) => oneDecimal.format(r.latencyMs.p99) },
    { header: "errors", numeric: true, cell: (r) => wholeNumber.format(r.errors) },
    {
      header: hasWorker ? "peak MiB svc/worker" : "peak RSS MiB",
      numeric: true,
      cell: (r) =>
        r.workerPeakRssMiB === undefined
          ? formatMiB(r.peakRssMiB)
          : `${formatMiB(r.peakRssMiB)} / ${formatMiB(r.workerPeakRssMiB)}`,
    },
    {
      header: "of ceiling",
      numeric: true,
      cell: (r) => (r.ceilingRatio === null ? "—" : `${oneDecimal.format(r.ceilingRatio * 100)}%`),
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
    "",
    line(header),
    rule,
    ...rows.map(line),
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
    "",
    line(columns.map((column) => column.header)),
    `|${columns.map((column) => (column.numeric ? " ---: " : " --- ")).join("|")}|`,
    ...rows,
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

function truncate(text: string, limit: number): string {
  const characters = [...singleLine(text)];
  return characters.length <= limit
    ? characters.join("")
    : `${characters.slice(0, limit - 1).join("")}…`;
}

function svgText(x: number, y: number, content: string, attributes = ""): string {
  return `<text x="${x.toFixed(1)}" y="${y}"${attributes}>${escapeXml(content)}</text>`;
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
  const panels = [
    {
      heading: "throughput (items/s)",
      value: (r: ScenarioResult) => r.itemsPerSecond,
      label: (r: ScenarioResult) => `${formatRate(r.itemsPerSecond)} ${r.unit}/s`,
    },
    {
      heading: "p99 latency (ms)",
      value: (r: ScenarioResult) => r.latencyMs.p99,
      label: (r: ScenarioResult) => `${oneDecimal.format(r.latencyMs.p99)} ms`,
    },
  ].map((panel, index) => {
    const maximum = Math.max(0, ...measured.map(panel.value).filter(Number.isFinite));
    const barRoom = PANEL_WIDTH - 2 * MARGIN - VALUE_LABEL_ROOM;
    return {
      ...panel,
      left: index * PANEL_WIDTH + MARGIN,
      scale: maximum > 0 ? barRoom / maximum : 0,
    };
  });

  const body: string[] = [
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
    body.push(
      `<rect class="swatch" x="${legendX}" y="78" width="12" height="12" fill="${colourOf(target)}"/>`,
      svgText(legendX + 16, 89, target, ' class="label"'),
    );
    legendX += 16 + 7 * displayLength(target) + 24;
  }
  for (const panel of panels)
    body.push(svgText(panel.left, 118, panel.heading, ' class="heading"'));

  let y = 132;
  for (const results of groups.values()) {
    y += 16;
    body.push(svgText(MARGIN, y, results[0]?.title ?? "", ' class="group"'));
    y += 6;
    for (const result of results) {
      const textY = y + BAR_HEIGHT - 4;
      if (result.skipped !== undefined) {
        const note = `${result.target} skipped: ${truncate(result.skipped, MAX_REASON_LENGTH)}`;
        body.push(
          svgText(panels[0]!.left, textY, note, ' class="skipped"'),
          svgText(panels[1]!.left, textY, "skipped", ' class="skipped"'),
        );
      } else {
        for (const panel of panels) {
          const value = panel.value(result);
          const width = Number.isFinite(value) ? Math.max(0, value * panel.scale) : 0;
          body.push(
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

  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<svg xmlns="http://www.w3.org/2000/svg" width="${SVG_WIDTH}" height="${height}" viewBox="0 0 ${SVG_WIDTH} ${height}" role="img">`,
    // Read out by screen readers, and shown as the document's name by viewers.
    `<title>${escapeXml(`receiptd bench ${run.startedAt} (${run.mode}): throughput and p99 per scenario`)}</title>`,
    // Generic families only, so the file needs nothing from the network.
    "<style>text{font-family:system-ui,sans-serif;fill:#222222}.title{font-size:16px;font-weight:bold}.heading,.group{font-size:13px;font-weight:bold}.note,.label{font-size:12px}.skipped{font-size:12px;fill:#999999;font-style:italic}</style>",
    `<rect class="background" width="${SVG_WIDTH}" height="${height}" fill="#ffffff"/>`,
    ...body,
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
