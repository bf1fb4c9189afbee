/**
 * The receipt chain as a window: the first receipts are drawn, more come in as the person
 * scrolls to the end of the window or asks for them, any receipt can be brought in by its
 * number, and the window never holds more than MAX_DRAWN receipts (the oldest part is let go
 * as the window moves). A bundle of 10,000 receipts costs the page what a bundle of a
 * hundred does.
 *
 * Receipts are named by their position in the bundle, `#0` first: the verifier's own
 * numbering (`seq 0 != position 6`), and the same as `seq` in a sound chain. Where a
 * receipt's `seq` differs, its card says so.
 */
import type { ChainModel, Finding, Mark, ReceiptNode } from "./chain-model.js";
import { type Child, h, replace, shortDid, shortHex } from "./dom.js";
import {
  errorWords,
  findingKindWords,
  findingTone,
  iconFor,
  reasonWords,
  type Tone,
  typeWords,
} from "./wording.js";

/** Receipts drawn at first, and added per request. */
export const BATCH = 25;
/** Receipts the window holds at most. */
export const MAX_DRAWN = 4 * BATCH;
/** How close (px) the end of the window may come into view before more is drawn. */
const AHEAD_PX = 800;

export interface ChainView {
  element: HTMLElement;
  /** A link that brings receipt `position` into the window, scrolls to it and focuses it. */
  link(position: number, text?: string): HTMLElement;
  jumpTo(position: number): void;
}

export function chainView(model: ChainModel): ChainView {
  const nodes = model.receipts;
  const total = nodes.length;
  let start = 0;
  let end = Math.min(total, BATCH);

  const list = h("ol", { class: "chain", id: "bundle-chain", "aria-describedby": "chain-window" });
  const windowNote = h("p", { class: "muted chain__window", id: "chain-window", role: "status" });
  const earlier = h(
    "button",
    { type: "button", class: "button button--small", id: "chain-earlier" },
    "",
  );
  const later = h(
    "button",
    { type: "button", class: "button button--small", id: "chain-later" },
    "",
  );
  const goInput = h("input", {
    type: "number",
    id: "chain-go",
    class: "input input--narrow",
    min: 0,
    max: Math.max(0, total - 1),
    inputmode: "numeric",
  });
  const goForm = h(
    "form",
    { class: "chain__go row", novalidate: true },
    h("label", { for: "chain-go" }, "Go to receipt #"),
    goInput,
    h("button", { type: "submit", class: "button button--small" }, "Show"),
  );

  const link = (position: number, text?: string): HTMLElement =>
    h(
      "a",
      {
        href: `#receipt-${position}`,
        onclick: (event: Event) => {
          event.preventDefault();
          jumpTo(position);
        },
      },
      text ?? `receipt #${position}`,
    );

  let drawn = false;
  const draw = () => {
    drawn = true;
    replace(
      list,
      nodes
        .slice(start, end)
        .map((node) => receiptCard(node, node.position === model.firstBroken, link)),
    );
    update();
  };

  const update = () => {
    earlier.hidden = start === 0;
    const before = Math.min(BATCH, start);
    replace(
      earlier,
      before === 1 ? `Show receipt #0` : `Show the ${before} receipts before #${start}`,
    );
    later.hidden = end >= total;
    const next = Math.min(BATCH, total - end);
    replace(
      later,
      next === 1
        ? `Show receipt #${end}, the last`
        : `Show the next ${next} receipts (${(total - end).toLocaleString("en")} not shown)`,
    );
    replace(
      windowNote,
      total <= BATCH
        ? ""
        : `Showing receipts #${start} to #${end - 1} of ${total.toLocaleString("en")}.`,
    );
    windowNote.hidden = total <= BATCH;
    goForm.hidden = total <= BATCH;
  };

  const extendLater = () => {
    if (end >= total) return;
    const from = end;
    end = Math.min(total, end + BATCH);
    list.append(
      ...nodes
        .slice(from, end)
        .map((node) => receiptCard(node, node.position === model.firstBroken, link)),
    );
    // Let go of the oldest part; the browser keeps what is on screen where it is.
    while (end - start > MAX_DRAWN) {
      list.firstElementChild?.remove();
      start += 1;
    }
    update();
  };

  const extendEarlier = () => {
    if (start === 0) return;
    const from = start;
    start = Math.max(0, start - BATCH);
    list.prepend(
      ...nodes
        .slice(start, from)
        .map((node) => receiptCard(node, node.position === model.firstBroken, link)),
    );
    while (end - start > MAX_DRAWN) {
      list.lastElementChild?.remove();
      end -= 1;
    }
    update();
  };

  function jumpTo(position: number): void {
    if (position < 0 || position >= total) return;
    if (!drawn || position < start || position >= end) {
      start = Math.max(0, position - 5);
      end = Math.min(total, start + BATCH);
      draw();
    }
    const card = document.getElementById(`receipt-${position}`);
    card?.scrollIntoView({ block: "center" });
    card?.focus({ preventScroll: true });
  }

  earlier.addEventListener("click", extendEarlier);
  later.addEventListener("click", () => {
    const first = end;
    extendLater();
    document.getElementById(`receipt-${first}`)?.focus();
  });
  goForm.addEventListener("submit", (event) => {
    event.preventDefault();
    const position = Number(goInput.value);
    if (goInput.value !== "" && Number.isInteger(position)) jumpTo(position);
  });

  // More comes in when the end of the window scrolls into view. Scrolling, not an
  // IntersectionObserver: a full-page screenshot or a tall window would otherwise draw all.
  let pending = false;
  const onScroll = () => {
    if (!list.isConnected) {
      removeEventListener("scroll", onScroll);
      return;
    }
    if (pending || later.hidden) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      if (later.getBoundingClientRect().top < innerHeight + AHEAD_PX) extendLater();
    });
  };
  addEventListener("scroll", onScroll, { passive: true });

  // In a task of its own, after the verdict and the findings: each stays short.
  update();
  setTimeout(() => {
    if (!drawn) draw();
  }, 0);
  return {
    element: h("div", { class: "chain-view" }, goForm, windowNote, earlier, list, later),
    link,
    jumpTo,
  };
}

function stateOf(node: ReceiptNode): Tone {
  if (node.findings.some((f) => f.kind === "error")) return "bad";
  if (node.findings.some((f) => f.kind === "insufficient")) return "insufficient";
  return node.findings.length > 0 ? "warn" : "good";
}

function findingLine(finding: Finding): HTMLElement {
  const words = finding.kind === "error" ? errorWords(finding.code) : reasonWords(finding.code);
  const tone = findingTone(finding.kind);
  return h(
    "li",
    { class: `finding finding--${tone}`, "data-code": finding.code },
    h("span", { class: "finding__icon", "aria-hidden": "true" }, iconFor(tone)),
    h(
      "div",
      {},
      h(
        "p",
        { class: "finding__words" },
        h("span", { class: "visually-hidden" }, `${findingKindWords(finding.kind)}: `),
        words,
      ),
      h(
        "p",
        { class: "finding__code" },
        h("code", {}, finding.code),
        finding.detail === null
          ? null
          : [" · ", h("span", { class: "finding__detail" }, finding.detail)],
      ),
    ),
  );
}

function receiptCard(
  node: ReceiptNode,
  firstBroken: boolean,
  link: (position: number, text?: string) => HTMLElement,
): HTMLElement {
  const state = stateOf(node);
  const friendly = typeWords(node.type);
  const linkWords: Child =
    node.link === "first"
      ? h("span", { class: "link link--first" }, "Start of the chain")
      : node.link === "intact"
        ? h(
            "span",
            { class: "link link--intact" },
            "✓ Links to ",
            node.prevPointsTo === null
              ? "the receipt before"
              : link(node.prevPointsTo, `the receipt before (#${node.prevPointsTo})`),
          )
        : h(
            "span",
            { class: "link link--broken" },
            "✗ Does not link to the receipt before",
            node.prevPointsTo === null ? null : [" (points to ", link(node.prevPointsTo), ")"],
          );
  const seqDiffers = node.seq !== String(node.position);
  return h(
    "li",
    {
      class: `receipt receipt--${state}${firstBroken ? " receipt--first-broken" : ""}`,
      id: `receipt-${node.position}`,
      "data-seq": node.seq,
      "data-position": node.position,
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
        h("span", { class: "receipt__seq" }, `#${node.position}`),
        h("span", { class: "receipt__type" }, friendly ?? node.type),
        friendly === undefined ? null : h("code", { class: "receipt__rawtype" }, node.type),
        seqDiffers ? h("span", { class: "badge badge--warn" }, `seq ${node.seq}`) : null,
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
        h("dd", {}, linkWords),
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
        : h("ul", { class: "findings findings--compact" }, node.findings.map(findingLine)),
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
