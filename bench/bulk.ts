/**
 * `npm run bench:bulk`: only the bulk scenarios of issue 35 (bulk-scenarios.ts), which
 * `npm run bench` runs too, as rows of its table: `bulk-local` (the CLI vs the library on
 * every core), `bulk-remote` (the CLI's `--remote` vs batch-50 of a local `receiptd serve`,
 * measured just before it) and `bulk-rss` (the CLI's peak RSS over a generated NDJSON file).
 *
 *   node dist/bench/bulk.js [--scenarios a,b] [--bundles N] [--rss-lines N] [--seconds N]
 */
import { parseArgs } from "node:util";
import {
  BULK_SCENARIO_IDS,
  BULK_SIZES,
  type BulkScenarioId,
  batch50Rate,
  bulkInputs,
  measureBulkLocal,
  measureBulkRemote,
  measureBulkRss,
} from "./bulk-scenarios.js";
import { measureCeiling } from "./ceiling.js";
import { signaturesOf } from "./fixtures.js";
import { benchBundle } from "./scenarios.js";
import { PeakRss, startServiceProcess } from "./service-process.js";
import type { ScenarioResult } from "./types.js";

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      scenarios: { type: "string" },
      bundles: { type: "string", default: String(BULK_SIZES.full.bundles) },
      "rss-lines": { type: "string", default: String(BULK_SIZES.full.rssLines) },
      seconds: { type: "string", default: "10" },
    },
  });
  const wanted = (values.scenarios?.split(",") ?? [...BULK_SCENARIO_IDS]) as BulkScenarioId[];
  const seconds = Number(values.seconds);
  // The "of ceiling" figure of each row; a short measurement is enough for it.
  const ceiling = await measureCeiling(signaturesOf(benchBundle), 1_000);
  const figures: ScenarioResult[] = [];
  const inputs = await bulkInputs(Number(values.bundles));
  try {
    if (wanted.includes("bulk-local")) {
      console.log(`bulk-local: the library on every core, then the CLI, ${inputs.count} bundles …`);
      figures.push(await measureBulkLocal(inputs, ceiling));
    }
    if (wanted.includes("bulk-remote")) {
      console.log("bulk-remote: starting receiptd …");
      const service = await startServiceProcess({ distributed: false });
      try {
        const deployment = {
          label: "receiptd (embedded)",
          origin: service.origin,
          apiKey: service.apiKey,
          mode: "embedded" as const,
        };
        console.log(`bulk-remote: batch-50 for ${seconds} s, then the CLI …`);
        const batchRate = await batch50Rate(deployment, {
          warmupMs: 1_000,
          durationMs: seconds * 1000,
        });
        const rss = new PeakRss(service.pids.web);
        rss.start();
        figures.push(
          await measureBulkRemote(inputs, deployment, batchRate, ceiling, () => rss.stop()),
        );
      } finally {
        await service.stop();
      }
    }
  } finally {
    await inputs.close();
  }
  if (wanted.includes("bulk-rss")) {
    console.log(`bulk-rss: writing ${values["rss-lines"]} lines, then the CLI over them …`);
    figures.push(await measureBulkRss(Number(values["rss-lines"]), ceiling));
  }
  for (const figure of figures) {
    const rss = figure.peakRssMiB === null ? "" : `, peak RSS ${figure.peakRssMiB.toFixed(1)} MiB`;
    console.log(
      `${figure.scenario} @ ${figure.target}: ${Math.round(figure.itemsPerSecond)} bundles/s${rss}` +
        ` (goal ${figure.goal?.description}: ${figure.goal?.met ? "met" : "NOT met"})`,
    );
  }
}

await main();
