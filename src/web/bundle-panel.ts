/**
 * The "Bundle" tab: drop or paste a bundle, see the verdict, the findings and the chain.
 *
 * Verification runs in the page's Web Worker (verify-client.ts), with progress and Cancel;
 * the page's thread only draws, and draws what a person can read: findings grouped by code,
 * a window of the chain (chain-view.ts), the start of the result JSON.
 */
import type { BundleView, FindingGroup, SummaryRow } from "./bundle-view.js";
import { chainView } from "./chain-view.js";
import { type Child, h, jsonBlock, replace, shortDid } from "./dom.js";
import { dropZone, type LoadedFile, renderFileList } from "./file-drop.js";
import { verifyOnServer } from "./service.js";
import { sessionKey } from "./session-key.js";
import { type Verification, verifyInWorker } from "./verify-client.js";
import {
  errorWords,
  findingKindWords,
  findingTone,
  iconFor,
  reasonWords,
  VERDICT_WORDS,
} from "./wording.js";

export interface BundleState {
  bundle: LoadedFile | null;
}

/** Shared with the receipt tab, which can check a receipt against the bundle loaded here. */
export const bundleState: BundleState = { bundle: null };

export interface BundlePanelHooks {
  /** Opens the receipt tab with a verification receipt the server returned. */
  checkReceipt: (receipt: LoadedFile, bundle: LoadedFile) => void;
  /** Opens the evaluation-key tab. */
  openKeyTab: () => void;
}

const FROM_SESSION =
  "Filled in with the evaluation key you got on this page (kept in this page's memory only).";

/** How often the elapsed time under the progress bar is rewritten. */
const TICK_MS = 250;

/**
 * Puts `key` into the "Verify on the server as well" field if a result shows one now; later
 * results take it from session-key.ts.
 */
export function fillServerKey(key: string): void {
  const field = document.getElementById("server-key");
  if (field instanceof HTMLInputElement) field.value = key;
  const source = document.getElementById("server-key-source");
  if (source !== null) replace(source, FROM_SESSION);
}

function bytesWords(bytes: number): string {
  if (bytes < 1024 * 1024) return `${bytes.toLocaleString("en")} bytes`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}

export function bundlePanel(root: HTMLElement, hooks: BundlePanelHooks): void {
  const revocations: LoadedFile[] = [];
  const result = h("div", { class: "result", id: "bundle-result" });
  // Announced: the start of a verification and its verdict, in words (not the whole result).
  const status = h("p", { class: "visually-hidden", id: "bundle-status", role: "status" });
  const requireAnchor = h("input", { type: "checkbox", id: "bundle-require-anchor" });
  const revocationList = h("ul", { class: "file-list", id: "bundle-revocation-list" });
  const pasted = h("textarea", {
    id: "bundle-text",
    rows: 8,
    spellcheck: "false",
    autocomplete: "off",
    placeholder: '{"spec": "continuity-receipt/0.6", "receipts": […]}',
  });

  let runs = 0;
  let running: Verification | null = null;
  const run = async () => {
    const bundle = bundleState.bundle;
    if (bundle === null) return;
    const thisRun = ++runs;
    const options = {
      requireAnchor: requireAnchor.checked,
      revocations: revocations.map((file) => ({ name: file.name, data: file.bytes })),
    };
    const progress = h("progress", { id: "bundle-progress", "aria-label": "Verification" });
    const progressText = h("span", { class: "progress__text", id: "bundle-progress-text" });
    const cancel = h(
      "button",
      { type: "button", class: "button button--small", id: "bundle-cancel" },
      "Cancel",
    );
    replace(
      result,
      h(
        "div",
        { class: "progress-box", id: "bundle-working" },
        h(
          "p",
          { class: "working" },
          `Verifying ${bundle.name} (${bytesWords(bundle.bytes.length)}) in this browser…`,
        ),
        h("div", { class: "row" }, progress, cancel),
        progressText,
      ),
    );
    announce(status, `Verifying ${bundle.name}…`);
    const started = performance.now();
    let phase = "Checking every receipt";
    const tick = () => {
      const seconds = ((performance.now() - started) / 1000).toFixed(1);
      replace(progressText, `${phase} · ${seconds} s`);
    };
    tick();
    const timer = setInterval(tick, TICK_MS);
    const verification = verifyInWorker(
      { bundle: bundle.bytes, ...options },
      (step, done, total) => {
        if (step !== "drawing" || total === 0) return;
        progress.max = total;
        progress.value = done;
        phase = `Laying out the chain: ${done.toLocaleString("en")} of ${total.toLocaleString("en")} receipts`;
        tick();
      },
    );
    running = verification;
    cancel.addEventListener("click", () => verification.cancel());
    const outcome = await verification.outcome;
    clearInterval(timer);
    if (thisRun !== runs) return;
    running = null;
    if (outcome.type === "done") {
      const verdict = renderResult(
        result,
        bundle,
        outcome.view,
        outcome.result,
        outcome.elapsedMs,
        {
          requireAnchor: options.requireAnchor,
          revocations: revocations.length,
          hooks,
        },
      );
      // Scripts and tests can tell one finished verification from the next.
      result.dataset.run = String(thisRun);
      showVerdict(verdict);
      announce(status, verdictAnnouncement(outcome.view));
      return;
    }
    const note = h(
      "p",
      {
        class: `callout callout--${outcome.type === "cancelled" ? "warn" : "bad"}`,
        id: outcome.type === "cancelled" ? "bundle-cancelled" : "bundle-failed",
        tabindex: -1,
      },
      outcome.type === "cancelled"
        ? `Cancelled: ${bundle.name} was not verified. Drop it again, or another bundle, to verify.`
        : `The verifier stopped before a verdict (${outcome.message}). The CLI gives the same verdict as this page: npx continuity-receipt-verify ${bundle.name}`,
    );
    replace(result, note);
    result.dataset.run = String(thisRun);
    showVerdict(note);
    announce(status, note.textContent ?? "");
  };

  const load = (file: LoadedFile) => {
    bundleState.bundle = file;
    void run();
  };

  const renderRevocations = () => renderFileList(revocationList, revocations, () => void run());

  requireAnchor.addEventListener("change", () => void run());
  // Escape cancels a verification in progress, wherever the focus is in the tab.
  root.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && running !== null) running.cancel();
  });

  replace(
    root,
    h("h2", { class: "panel__title" }, "Check a bundle"),
    h(
      "p",
      { class: "lead" },
      "Drop a Continuity Receipt bundle, or paste its JSON. It is verified here, in your browser: ",
      h("strong", {}, "the bundle is not uploaded"),
      ", and the result is byte for byte what receiptd's server and CLI give.",
    ),
    dropZone({
      id: "bundle-file",
      title: "Drop a bundle (.json) here",
      hint: "Up to 8 MiB. Read only by this page.",
      accept: ".json,application/json",
      onFiles: (files) => load(files[0]!),
    }),
    h(
      "details",
      { class: "paste" },
      h("summary", {}, "Paste JSON instead"),
      h("label", { for: "bundle-text" }, "Bundle JSON"),
      pasted,
      h(
        "button",
        {
          type: "button",
          class: "button",
          id: "bundle-text-verify",
          onclick: () =>
            load({ name: "pasted JSON", bytes: new TextEncoder().encode(pasted.value) }),
        },
        "Verify pasted JSON",
      ),
    ),
    h(
      "fieldset",
      { class: "options" },
      h("legend", {}, "Options"),
      h(
        "div",
        { class: "check" },
        requireAnchor,
        h(
          "label",
          { for: "bundle-require-anchor" },
          "Require an anchor ",
          h("span", { class: "muted" }, "(without one the verdict is at best Provisional)"),
        ),
      ),
      h("p", { class: "options__label", id: "bundle-revocations-label" }, "Revocation documents"),
      dropZone({
        id: "bundle-revocations",
        title: "Add revocation documents",
        hint: "Issuers' signed lists of revoked keys, checked as with --revocations.",
        accept: ".json,application/json",
        multiple: true,
        onFiles: (files) => {
          revocations.push(...files);
          renderRevocations();
          void run();
        },
      }),
      revocationList,
    ),
    status,
    result,
  );
}

/** Sets the live region's text so that it is read even when it equals the last one. */
function announce(region: HTMLElement, text: string): void {
  region.textContent = "";
  requestAnimationFrame(() => {
    region.textContent = text;
  });
}

/**
 * The verdict, in view and focused, on every screen size: a phone shows it below the fold.
 * After the next frame's layout, so that scrolling to it does not force a layout of its own.
 */
function showVerdict(element: HTMLElement): void {
  requestAnimationFrame(() => {
    setTimeout(() => {
      if (!element.isConnected) return;
      element.scrollIntoView({ block: "start" });
      element.focus({ preventScroll: true });
    }, 0);
  });
}

function plural(count: number, word: string): string {
  return `${count.toLocaleString("en")} ${word}${count === 1 ? "" : "s"}`;
}

function verdictAnnouncement(view: BundleView): string {
  const words = VERDICT_WORDS[view.verdict];
  return `${words?.title ?? view.verdict}: ${words?.sentence ?? ""} ${plural(view.errorCount, "error")}, ${plural(view.reasonCount, "reason")}.`;
}

function verdictBanner(verdict: string): HTMLElement {
  const words = VERDICT_WORDS[verdict] ?? { tone: "neutral", title: verdict, sentence: "" };
  return h(
    "div",
    {
      class: `verdict verdict--${words.tone}`,
      id: "bundle-verdict",
      "data-verdict": verdict,
      tabindex: -1,
    },
    h("span", { class: "verdict__icon", "aria-hidden": "true" }, iconFor(words.tone)),
    h(
      "div",
      {},
      h(
        "p",
        { class: "verdict__word" },
        words.title,
        " ",
        h("code", { class: "verdict__code" }, verdict),
      ),
      h("p", { class: "verdict__sentence" }, words.sentence),
    ),
  );
}

/** A link to a receipt of the chain: drawn into the chain's window first when it is not. */
export type ReceiptLink = (position: number, text?: string) => HTMLElement;

/** One line per code: what it means, how often, its first details and receipts. */
function groupItem(group: FindingGroup, link: ReceiptLink): HTMLElement {
  const words = group.kind === "error" ? errorWords(group.code) : reasonWords(group.code);
  const tone = findingTone(group.kind);
  const moreReceipts = group.receiptCount - group.receipts.length;
  return h(
    "li",
    {
      class: `finding finding--${tone}`,
      "data-code": group.code,
      "data-count": group.count,
    },
    h("span", { class: "finding__icon", "aria-hidden": "true" }, iconFor(tone)),
    h(
      "div",
      {},
      h(
        "p",
        { class: "finding__words" },
        h("span", { class: "visually-hidden" }, `${findingKindWords(group.kind)}: `),
        words,
      ),
      h(
        "p",
        { class: "finding__code" },
        h("code", {}, group.code),
        group.count === 1
          ? null
          : h("span", { class: "finding__count" }, ` × ${group.count.toLocaleString("en")}`),
        group.details.length === 1 && group.moreDetails === 0
          ? [" · ", h("span", { class: "finding__detail" }, group.details[0]!.detail)]
          : null,
        group.receipts.length === 1 && moreReceipts === 0
          ? [" · ", link(group.receipts[0]!)]
          : null,
      ),
      group.details.length > 1 || group.moreDetails > 0
        ? h(
            "ul",
            { class: "finding__details" },
            group.details.map(({ detail, count }) =>
              h(
                "li",
                {},
                h("span", { class: "finding__detail" }, detail),
                count === 1 ? null : ` (× ${count.toLocaleString("en")})`,
              ),
            ),
            group.moreDetails === 0
              ? null
              : h("li", { class: "muted" }, `and ${plural(group.moreDetails, "other detail")}`),
          )
        : null,
      group.receipts.length > 1 || moreReceipts > 0
        ? h(
            "p",
            { class: "finding__receipts" },
            `On ${plural(group.receiptCount, "receipt")}: `,
            group.receipts.map((position, index) => [
              index === 0 ? "" : ", ",
              link(position, `#${position}`),
            ]),
            moreReceipts === 0 ? "" : ` and ${moreReceipts.toLocaleString("en")} more`,
            ".",
          )
        : null,
    ),
  );
}

function summaryList(rows: SummaryRow[]): HTMLElement | null {
  if (rows.length === 0) return null;
  const items: Child[] = [];
  for (const row of rows) {
    const more =
      row.more === 0
        ? null
        : h("span", { class: "muted" }, ` and ${row.more.toLocaleString("en")} more`);
    items.push(
      h("dt", {}, row.term),
      h(
        "dd",
        {},
        row.dids
          ? h(
              "ul",
              { class: "plain" },
              row.values.map((did) => h("li", {}, shortDid(did))),
              more === null ? null : h("li", {}, more),
            )
          : [row.values.join(", "), more],
      ),
    );
  }
  return h("dl", { class: "facts facts--summary", id: "bundle-summary" }, items);
}

interface RenderOptions {
  requireAnchor: boolean;
  revocations: number;
  hooks: BundlePanelHooks;
}

/** Draws the result into `root`; returns the verdict banner. */
function renderResult(
  root: HTMLElement,
  bundle: LoadedFile,
  view: BundleView,
  fullResult: Blob,
  elapsedMs: number,
  options: RenderOptions,
): HTMLElement {
  const chain = view.chain.drawn ? chainView(view.chain) : null;
  const link: ReceiptLink = (position, text) =>
    chain === null ? h("span", {}, text ?? `receipt #${position}`) : chain.link(position, text);
  const banner = verdictBanner(view.verdict);
  const firstBroken = view.chain.firstBroken;
  const brokenNode = firstBroken === null ? undefined : view.chain.receipts[firstBroken];
  const brokenCode = brokenNode?.findings.find((f) => f.kind === "error")?.code;
  replace(
    root,
    banner,
    h(
      "p",
      { class: "meta" },
      `${bundle.name} · ${bundle.bytes.length.toLocaleString("en")} bytes · verified in this browser in ${Math.max(1, Math.round(elapsedMs)).toLocaleString("en")} ms`,
      options.requireAnchor ? " · anchor required" : "",
      options.revocations > 0 ? ` · ${options.revocations} revocation document(s)` : "",
      " · nothing was sent.",
    ),
    h(
      "section",
      { class: "block", "aria-labelledby": "findings-title" },
      h(
        "h3",
        { id: "findings-title" },
        view.groups.length === 0
          ? "Findings: none"
          : `Findings (${plural(view.errorCount, "error")}, ${plural(view.reasonCount, "reason")}${view.groups.length > 1 ? `, of ${view.groups.length} kinds` : ""})`,
      ),
      view.groups.length === 0
        ? h("p", { class: "muted" }, "No errors, and nothing left unchecked.")
        : h(
            "ul",
            { class: "findings", id: "bundle-findings" },
            view.groups.map((group) => groupItem(group, link)),
          ),
    ),
    chain === null
      ? null
      : h(
          "section",
          { class: "block", "aria-labelledby": "chain-title" },
          h(
            "h3",
            { id: "chain-title" },
            `Receipt chain (${view.chain.receipts.length.toLocaleString("en")}, in bundle order)`,
          ),
          firstBroken === null
            ? null
            : h(
                "p",
                { class: "callout callout--bad", id: "chain-break" },
                "The chain breaks at ",
                chain.link(firstBroken),
                `, the first receipt with an error${brokenCode === undefined ? "" : ` (${brokenCode})`}: every receipt from there on is in doubt. `,
                h(
                  "button",
                  {
                    type: "button",
                    class: "button button--small",
                    id: "chain-break-show",
                    onclick: () => chain.jumpTo(firstBroken),
                  },
                  `Show receipt #${firstBroken}`,
                ),
              ),
          chain.element,
        ),
    (() => {
      const list = summaryList(view.summary);
      return list === null
        ? null
        : h(
            "section",
            { class: "block", "aria-labelledby": "summary-title" },
            h("h3", { id: "summary-title" }, "Summary"),
            list,
          );
    })(),
    h(
      "section",
      { class: "block" },
      jsonBlock(
        "Result JSON (what continuity-receipt-verify prints)",
        { preview: view.preview, cut: view.previewCut, full: fullResult, bytes: view.resultBytes },
        "result.json",
      ),
    ),
    serverCheck(bundle, () => fullResult.text(), options),
  );
  return banner;
}

/** "Verify on the server as well": the one action that sends the bundle, with a pasted key. */
function serverCheck(
  bundle: LoadedFile,
  browserText: () => Promise<string>,
  options: RenderOptions,
): HTMLElement {
  const remembered = sessionKey();
  const keyInput = h("input", {
    value: remembered ?? undefined,
    type: "password",
    id: "server-key",
    class: "input",
    autocomplete: "off",
    spellcheck: "false",
    placeholder: "svc_…",
    "aria-describedby": "server-key-note server-key-source",
  });
  const output = h("div", { class: "server-result", id: "server-result", "aria-live": "polite" });
  const form = h(
    "form",
    { class: "server-form", id: "server-form", novalidate: true },
    h("label", { for: "server-key" }, "API key"),
    h(
      "div",
      { class: "row" },
      keyInput,
      h("button", { type: "submit", class: "button" }, "Verify on the server"),
    ),
    h(
      "p",
      { class: "muted", id: "server-key-note" },
      `Sends this bundle to ${location.origin}/verify?receipt=1 with the key, for a signed verification receipt. The key is used for this request only and stored nowhere.`,
      options.revocations > 0
        ? " Revocation documents are not sent: the server checks the bundle's own statements."
        : "",
    ),
    h(
      "p",
      { class: "muted", id: "server-key-source" },
      remembered === null
        ? [
            "No key? ",
            h(
              "a",
              {
                href: "#key",
                onclick: (event: Event) => {
                  event.preventDefault();
                  options.hooks.openKeyTab();
                },
              },
              "Get an evaluation key",
            ),
            " at once, on this page.",
          ]
        : FROM_SESSION,
    ),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const key = keyInput.value.trim();
    if (key === "") {
      replace(output, h("p", { class: "callout callout--warn" }, "Paste an API key first."));
      keyInput.focus();
      return;
    }
    replace(output, h("p", { class: "working" }, "Asking the server…"));
    verifyOnServer(bundle.bytes, key, options.requireAnchor).then(
      async (answer) =>
        renderServerAnswer(
          output,
          answer.status,
          answer.body,
          await browserText(),
          bundle,
          options,
        ),
      () =>
        replace(
          output,
          h(
            "p",
            { class: "callout callout--warn" },
            "The service could not be reached (offline?). The result above does not depend on it.",
          ),
        ),
    );
  });
  return h(
    "section",
    { class: "block server", "aria-labelledby": "server-title" },
    h("h3", { id: "server-title" }, "Verify on the server as well (optional)"),
    form,
    output,
  );
}

function renderServerAnswer(
  output: HTMLElement,
  status: number,
  body: Record<string, unknown> | null,
  browserText: string,
  bundle: LoadedFile,
  options: RenderOptions,
): void {
  if (status !== 200 || body === null) {
    const code = body !== null && typeof body.error === "string" ? body.error : `HTTP ${status}`;
    const hint = body !== null && typeof body.hint === "string" ? body.hint : "";
    replace(
      output,
      h(
        "p",
        { class: "callout callout--bad" },
        "The server refused: ",
        h("code", {}, code),
        hint === "" ? "" : ` — ${hint}`,
      ),
    );
    return;
  }
  const { verification_receipt: receipt, service: _service, ...verdict } = body;
  const browser = JSON.parse(browserText) as Record<string, unknown>;
  const agree = JSON.stringify(verdict) === JSON.stringify(browser);
  const receiptText = receipt === undefined ? null : `${JSON.stringify(receipt, null, 2)}\n`;
  replace(
    output,
    h(
      "p",
      { class: `callout callout--${agree ? "good" : "warn"}`, id: "server-agreement" },
      agree
        ? `The server's verdict is ${String(verdict.verdict)}, with the same errors, reasons and summary as this page.`
        : `The server's answer differs from this page's (server: ${String(verdict.verdict)}).${options.revocations > 0 ? " The revocation documents given here were not sent to it." : ""}`,
    ),
    receiptText === null
      ? null
      : [
          jsonBlock(
            "Signed verification receipt from the server",
            receiptText,
            "verification-receipt.json",
          ),
          h(
            "button",
            {
              type: "button",
              class: "button",
              onclick: () =>
                options.hooks.checkReceipt(
                  {
                    name: "the server's verification receipt",
                    bytes: new TextEncoder().encode(receiptText),
                  },
                  bundle,
                ),
            },
            "Check this receipt",
          ),
        ],
  );
}
