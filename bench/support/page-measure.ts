/**
 * What a bundle costs the verification page in Chromium (issue 25), shared by the browser
 * test, which asserts the counts, and `bench/web-page.ts`, which reports the times:
 *
 * - long tasks on the page's thread after the file is chosen (`PerformanceObserver`
 *   `longtask`: every task over 50 ms, with its duration);
 * - the time from choosing the file to the verdict being in the page;
 * - DOM nodes once drawn, the page's JS heap (`performance.memory`), and the resident memory
 *   of the browser's renderer processes (from /proc: the page, its worker, the DOM).
 *
 * The file is chosen with `setInputFiles`, as a person picking it would: no test code runs on
 * the page's thread to build it.
 */
import { readdirSync, readFileSync } from "node:fs";
import type { Page } from "playwright-core";

export interface DropMeasure {
  /** False when the verdict did not come within the time allowed. */
  settled: boolean;
  /** From choosing the file to the verdict in the page, in ms (null when not settled). */
  verdictMs: number | null;
  /** Durations of the long tasks on the page's thread after the file was chosen, in ms. */
  longTasks: number[];
  domNodes: number | null;
  heapBytes: number | null;
  /** Highest resident memory of the renderer processes seen while it ran, in bytes. */
  rendererRssBytes: number;
}

interface Probe {
  chosenAt: number | null;
  verdictAt: number | null;
  longTasks: { start: number; duration: number }[];
}

/** Installs the probe before a file is chosen (long tasks, and when the verdict appears). */
export async function installProbe(page: Page): Promise<void> {
  await page.evaluate(() => {
    const probe: Probe = { chosenAt: null, verdictAt: null, longTasks: [] };
    (globalThis as unknown as { __probe: Probe }).__probe = probe;
    new PerformanceObserver((list) => {
      for (const entry of list.getEntries())
        probe.longTasks.push({ start: entry.startTime, duration: entry.duration });
    }).observe({ type: "longtask", buffered: true });
    document.addEventListener(
      "change",
      (event) => {
        if ((event.target as Element | null)?.id === "bundle-file")
          probe.chosenAt = performance.now();
      },
      true,
    );
    const result = document.querySelector("#bundle-result")!;
    new MutationObserver(() => {
      if (probe.chosenAt !== null && probe.verdictAt === null && result.querySelector(".meta"))
        probe.verdictAt = performance.now();
    }).observe(result, { childList: true });
  });
}

/** The processes of the Chromium using `profile`: its browser process and its children. */
export function chromiumProcesses(profile: string): { pid: number; command: string }[] {
  const found: { pid: number; command: string }[] = [];
  for (const pid of readdirSync("/proc").filter((name) => /^\d+$/.test(name))) {
    try {
      const command = readFileSync(`/proc/${pid}/cmdline`, "utf8");
      if (command.includes(profile)) found.push({ pid: Number(pid), command });
    } catch {
      // The process ended while it was read.
    }
  }
  return found;
}

/** Resident memory of the renderer processes of the Chromium using `profile`, in bytes. */
export function rendererRss(profile: string): number {
  let total = 0;
  for (const { pid, command } of chromiumProcesses(profile)) {
    try {
      if (!command.includes("--type=renderer")) continue;
      const rss = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
      if (rss !== null) total += Number(rss[1]) * 1024;
    } catch {
      // The process ended while it was read.
    }
  }
  return total;
}

/**
 * Chooses `path` in the Bundle tab and waits up to `timeoutMs` for the verdict, or until the
 * renderer's memory passes `maxRendererBytes` (a page that grows without end is given up on
 * before it takes the machine's memory). The page must have the probe installed and the
 * Bundle tab open.
 */
export async function chooseAndMeasure(
  page: Page,
  path: string,
  profile: string,
  timeoutMs: number,
  maxRendererBytes = Number.POSITIVE_INFINITY,
): Promise<DropMeasure> {
  let rendererRssBytes = rendererRss(profile);
  let overMemory: () => void = () => {};
  const tooBig = new Promise<void>((resolve) => {
    overMemory = resolve;
  });
  const sampler = setInterval(() => {
    rendererRssBytes = Math.max(rendererRssBytes, rendererRss(profile));
    if (rendererRssBytes > maxRendererBytes) overMemory();
  }, 250);
  try {
    const runs = Number((await page.getAttribute("#bundle-result", "data-run")) ?? 0);
    await page.setInputFiles("#bundle-file", path);
    let settled = true;
    try {
      const verdict = page.waitForFunction(
        (previous) =>
          Number(document.querySelector("#bundle-result")?.getAttribute("data-run") ?? 0) >
          previous,
        runs,
        { timeout: timeoutMs, polling: 100 },
      );
      verdict.catch(() => {});
      await Promise.race([
        verdict,
        tooBig.then(() => {
          throw new Error("the renderer's memory passed the bound");
        }),
      ]);
    } catch {
      settled = false;
    }
    if (!settled) {
      return {
        settled,
        verdictMs: null,
        longTasks: [],
        domNodes: null,
        heapBytes: null,
        rendererRssBytes,
      };
    }
    // Two frames, so that what the page draws after the verdict is counted too.
    await page.evaluate(
      () =>
        new Promise<void>((resolve) =>
          requestAnimationFrame(() => requestAnimationFrame(() => resolve())),
        ),
    );
    const seen = await page.evaluate(() => {
      const probe = (globalThis as unknown as { __probe: Probe }).__probe;
      const chosen = probe.chosenAt ?? 0;
      const memory = (performance as unknown as { memory?: { usedJSHeapSize: number } }).memory;
      return {
        verdictMs: probe.verdictAt === null ? null : probe.verdictAt - chosen,
        longTasks: probe.longTasks
          .filter((task) => task.start + task.duration >= chosen)
          .map((task) => task.duration),
        domNodes: document.getElementsByTagName("*").length,
        heapBytes: memory?.usedJSHeapSize ?? null,
      };
    });
    rendererRssBytes = Math.max(rendererRssBytes, rendererRss(profile));
    return { settled, ...seen, rendererRssBytes };
  } finally {
    clearInterval(sampler);
  }
}
