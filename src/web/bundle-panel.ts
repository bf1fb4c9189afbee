/** The "Bundle" tab: drop or paste a bundle, see the verdict, the findings and the chain. */
import { verifyBundleJson } from "./api.js";
import {
  buildChainModel,
  type Finding,
  type Mark,
  type ReceiptNode,
  type ResultLike,
} from "./chain-model.js";
import { type Child, h, jsonBlock, nextFrame, replace, shortDid, shortHex } from "./dom.js";
import { dropZone, type LoadedFile, renderFileList } from "./file-drop.js";
import { verifyOnServer } from "./service.js";
import { sessionKey } from "./session-key.js";
import { errorWords, reasonWords, type Tone, typeWords, VERDICT_WORDS } from "./wording.js";

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

export function bundlePanel(root: HTMLElement, hooks: BundlePanelHooks): void {
  const revocations: LoadedFile[] = [];
  const result = h("div", { class: "result", id: "bundle-result", "aria-live": "polite" });
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
  const run = async () => {
    const bundle = bundleState.bundle;
    if (bundle === null) return;
    const thisRun = ++runs;
    replace(result, h("p", { class: "working" }, `Verifying ${bundle.name} in this browser…`));
    await nextFrame();
    const started = performance.now();
    const text = verifyBundleJson(bundle.bytes, {
      requireAnchor: requireAnchor.checked,
      revocations: revocations.map((file) => ({ name: file.name, data: file.bytes })),
    });
    const elapsed = performance.now() - started;
    if (thisRun !== runs) return;
    renderResult(result, bundle, text, elapsed, {
      requireAnchor: requireAnchor.checked,
      revocations: revocations.length,
      hooks,
    });
    // Scripts and tests can tell one finished verification from the next.
    result.dataset.run = String(thisRun);
  };

  const load = (file: LoadedFile) => {
    bundleState.bundle = file;
    void run();
  };

  const renderRevocations = () => renderFileList(revocationList, revocations, () => void run());

  requireAnchor.addEventListener("change", () => void run());

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
    result,
  );
}

function verdictBanner(verdict: string): HTMLElement {
  const words = VERDICT_WORDS[verdict] ?? { tone: "neutral", title: verdict, sentence: "" };
  return h(
    "div",
    { class: `verdict verdict--${words.tone}`, id: "bundle-verdict", "data-verdict": verdict },
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

export function iconFor(tone: Tone): string {
  switch (tone) {
    case "good":
      return "✓";
    case "bad":
      return "✗";
    case "warn":
      return "!";
    case "insufficient":
      return "?";
    default:
      return "•";
  }
}

function findingTone(finding: Finding): Tone {
  return finding.kind === "error"
    ? "bad"
    : finding.kind === "insufficient"
      ? "insufficient"
      : "warn";
}

function findingItem(finding: Finding, receipt: ReceiptNode | null): HTMLElement {
  const words = finding.kind === "error" ? errorWords(finding.code) : reasonWords(finding.code);
  const kind =
    finding.kind === "error"
      ? "Error"
      : finding.kind === "insufficient"
        ? "Missing evidence"
        : "Not checked";
  return h(
    "li",
    { class: `finding finding--${findingTone(finding)}`, "data-code": finding.code },
    h("span", { class: "finding__icon", "aria-hidden": "true" }, iconFor(findingTone(finding))),
    h(
      "div",
      {},
      h(
        "p",
        { class: "finding__words" },
        h("span", { class: "visually-hidden" }, `${kind}: `),
        words,
      ),
      h(
        "p",
        { class: "finding__code" },
        h("code", {}, finding.code),
        finding.detail === null
          ? null
          : [" · ", h("span", { class: "finding__detail" }, finding.detail)],
        receipt === null
          ? null
          : [" · ", h("a", { href: `#receipt-${receipt.position}` }, `receipt #${receipt.seq}`)],
      ),
    ),
  );
}

function receiptCard(node: ReceiptNode, firstBroken: boolean): HTMLElement {
  const hasError = node.findings.some((f) => f.kind === "error");
  const hasInsufficient = node.findings.some((f) => f.kind === "insufficient");
  const state = hasError
    ? "bad"
    : hasInsufficient
      ? "insufficient"
      : node.findings.length > 0
        ? "warn"
        : "good";
  const friendly = typeWords(node.type);
  const link: Child =
    node.link === "first"
      ? h("span", { class: "link link--first" }, "Start of the chain")
      : node.link === "intact"
        ? h(
            "span",
            { class: "link link--intact" },
            "✓ Links to ",
            node.prevPointsTo === null
              ? "the receipt before"
              : h("a", { href: `#receipt-${node.prevPointsTo}` }, "the receipt before"),
          )
        : h(
            "span",
            { class: "link link--broken" },
            "✗ Does not link to the receipt before",
            node.prevPointsTo === null
              ? null
              : [
                  " (points to ",
                  h("a", { href: `#receipt-${node.prevPointsTo}` }, "another receipt"),
                  ")",
                ],
          );
  return h(
    "li",
    {
      class: `receipt receipt--${state}${firstBroken ? " receipt--first-broken" : ""}`,
      id: `receipt-${node.position}`,
      "data-seq": node.seq,
      "data-state": state,
      tabindex: -1,
    },
    h("span", { class: "receipt__dot", "aria-hidden": "true" }, iconFor(state)),
    h(
      "div",
      { class: "receipt__card" },
      h(
        "div",
        { class: "receipt__head" },
        h("span", { class: "receipt__seq" }, `#${node.seq}`),
        h("span", { class: "receipt__type" }, friendly ?? node.type),
        friendly === undefined ? null : h("code", { class: "receipt__rawtype" }, node.type),
        firstBroken ? h("span", { class: "badge badge--bad" }, "The chain breaks here") : null,
      ),
      h(
        "dl",
        { class: "facts" },
        h("dt", {}, "Issued"),
        h("dd", {}, node.issuedAt ?? "—"),
        h("dt", {}, "Issuer"),
        h("dd", {}, node.issuer === null ? "—" : shortDid(node.issuer)),
        h("dt", {}, "Link"),
        h("dd", {}, link),
        h("dt", {}, "Digest"),
        h("dd", {}, node.digest === null ? "cannot be computed" : shortHex(node.digest)),
        h("dt", {}, "Receipt id"),
        h("dd", {}, node.receiptId === null ? "—" : h("code", { class: "wrap" }, node.receiptId)),
      ),
      node.marks.length === 0
        ? null
        : h("ul", { class: "marks", "aria-label": "Marked" }, node.marks.map(markItem)),
      node.findings.length === 0
        ? null
        : h(
            "ul",
            { class: "findings findings--compact" },
            node.findings.map((f) => findingItem(f, null)),
          ),
    ),
  );
}

function markItem(mark: Mark): HTMLElement {
  return h(
    "li",
    { class: `mark mark--${mark.kind} mark--${mark.tone}`, "data-mark": mark.kind },
    mark.text,
  );
}

function summaryList(summary: Record<string, unknown> | undefined): HTMLElement | null {
  if (summary === undefined || Object.keys(summary).length === 0) return null;
  const rows: Child[] = [];
  const row = (term: string, value: Child) => rows.push(h("dt", {}, term), h("dd", {}, value));
  if (summary.receipts !== undefined) row("Receipts", String(summary.receipts));
  if (Array.isArray(summary.issuers)) {
    row(
      "Issuers",
      summary.issuers.length === 0
        ? "none"
        : h(
            "ul",
            { class: "plain" },
            summary.issuers.map((did) => h("li", {}, shortDid(String(did)))),
          ),
    );
  }
  if (summary.terminated !== undefined) row("Terminated", summary.terminated ? "yes" : "no");
  if (summary.settled !== undefined) row("Settled", summary.settled ? "yes" : "no");
  if (Array.isArray(summary.anchors)) row("Anchors", summary.anchors.join(", "));
  if (summary.revocations_checked !== undefined)
    row("Revocation statements checked", String(summary.revocations_checked));
  if (summary.revocations_external !== undefined)
    row("External revocation statements", String(summary.revocations_external));
  if (typeof summary.chain_head === "object" && summary.chain_head !== null) {
    const head = summary.chain_head as Record<string, unknown>;
    row("Chain head", `seq ${String(head.seq)}, anchored (${String(head.anchored)})`);
  }
  if (Array.isArray(summary.attestations)) {
    row(
      "Counterparty attestations",
      summary.attestations
        .map((a) => String((a as Record<string, unknown>).attestation))
        .join(", "),
    );
  }
  return h("dl", { class: "facts facts--summary", id: "bundle-summary" }, rows);
}

interface RenderOptions {
  requireAnchor: boolean;
  revocations: number;
  hooks: BundlePanelHooks;
}

function renderResult(
  root: HTMLElement,
  bundle: LoadedFile,
  text: string,
  elapsedMs: number,
  options: RenderOptions,
): void {
  const result = JSON.parse(text) as ResultLike;
  const model = buildChainModel(bundle.bytes, result);
  const byPosition = new Map(model.receipts.map((node) => [node.position, node]));
  const findings: HTMLElement[] = [];
  for (const node of model.receipts) {
    for (const finding of node.findings)
      findings.push(findingItem(finding, byPosition.get(node.position) ?? null));
  }
  for (const finding of model.bundleFindings) findings.push(findingItem(finding, null));
  const errorCount = result.errors.length;
  const reasonCount =
    (result.provisional_reasons?.length ?? 0) + (result.insufficient_reasons?.length ?? 0);

  replace(
    root,
    verdictBanner(result.verdict),
    h(
      "p",
      { class: "meta" },
      `${bundle.name} · ${bundle.bytes.length.toLocaleString("en")} bytes · verified in this browser in ${Math.max(1, Math.round(elapsedMs))} ms`,
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
        findings.length === 0
          ? "Findings: none"
          : `Findings (${errorCount} error${errorCount === 1 ? "" : "s"}, ${reasonCount} reason${reasonCount === 1 ? "" : "s"})`,
      ),
      findings.length === 0
        ? h("p", { class: "muted" }, "No errors, and nothing left unchecked.")
        : h("ul", { class: "findings", id: "bundle-findings" }, findings),
    ),
    model.drawn
      ? h(
          "section",
          { class: "block", "aria-labelledby": "chain-title" },
          h("h3", { id: "chain-title" }, `Receipt chain (${model.receipts.length}, in seq order)`),
          model.firstBroken === null
            ? null
            : h(
                "p",
                { class: "callout callout--bad" },
                "The chain breaks at ",
                h(
                  "a",
                  { href: `#receipt-${model.firstBroken}` },
                  `receipt #${byPosition.get(model.firstBroken)?.seq ?? "?"}`,
                ),
                ": every receipt from there on is in doubt.",
              ),
          h(
            "ol",
            { class: "chain", id: "bundle-chain" },
            model.receipts.map((node) => receiptCard(node, node.position === model.firstBroken)),
          ),
        )
      : null,
    (() => {
      const list = summaryList(result.summary);
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
      jsonBlock("Result JSON (what continuity-receipt-verify prints)", text, "result.json"),
    ),
    serverCheck(bundle, text, options),
  );
}

/** "Verify on the server as well": the one action that sends the bundle, with a pasted key. */
function serverCheck(bundle: LoadedFile, browserText: string, options: RenderOptions): HTMLElement {
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
      (answer) =>
        renderServerAnswer(output, answer.status, answer.body, browserText, bundle, options),
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
