/**
 * The "Evaluation key" tab: this service's terms from `/info`, and a form that gets a key at
 * once (a challenge, the proof of work solved in this browser, `POST /keys/evaluation`).
 * The key is shown once, here, and kept nowhere else unless the person asks to use it for
 * "Verify on the server as well" on this page, which keeps it in memory (session-key.ts).
 */
import { sha256 } from "@noble/hashes/sha2";
import { type Child, h, replace, uid } from "./dom.js";
import {
  type EvaluationTerms,
  formatUtc,
  formatWait,
  type IssuedKey,
  type KeyRequestOutcome,
  plural,
  type Refusal,
  requestEvaluationKey,
  type TermsState,
} from "./evaluation-key.js";
import { serviceInfo } from "./service.js";

export interface KeyPanelHooks {
  /** The person asked to use `key` for "Verify on the server as well" on this page. */
  useKey: (key: string) => void;
  /** Opens the Bundle tab. */
  openBundleTab: () => void;
}

export interface KeyPanel {
  /** The tab was selected: reads the terms the first time (and after a failed read). */
  shown(): void;
}

/** How often the progress line is rewritten while the work runs. */
const PROGRESS_EVERY_MS = 150;

export function keyPanel(root: HTMLElement, hooks: KeyPanelHooks): KeyPanel {
  const termsBox = h("div", { class: "key-terms", id: "key-terms" });
  const submit = h(
    "button",
    { type: "submit", class: "button", id: "key-submit" },
    "Get an evaluation key",
  );
  const cancel = h(
    "button",
    { type: "button", class: "button button--quiet", id: "key-cancel", hidden: true },
    "Cancel",
  );
  const progress = h("progress", {
    id: "key-progress",
    "aria-label": "Proof of work",
    hidden: true,
  });
  const progressText = h("p", {
    class: "key-progress muted",
    id: "key-progress-text",
    hidden: true,
  });
  // Phase changes and outcomes are announced; the hash count (progressText) is not.
  const status = h("div", { class: "key-status", id: "key-status", role: "status" });
  const form = h(
    "form",
    { class: "key-form", id: "key-form", novalidate: true, hidden: true },
    h("div", { class: "row" }, submit, cancel),
    progress,
    progressText,
    status,
  );
  const issued = h("div", { class: "key-issued", id: "key-issued" });

  let terms: EvaluationTerms | null = null;
  let reading: "idle" | "reading" | "read" | "failed" = "idle";
  let controller: AbortController | null = null;

  const readTerms = async () => {
    if (reading === "reading") return;
    reading = "reading";
    replace(termsBox, h("p", { class: "working" }, "Reading this service's terms (GET /info)…"));
    let state: TermsState;
    try {
      state = (await serviceInfo()).evaluationKeys;
    } catch (error) {
      reading = "failed";
      form.hidden = true;
      renderUnreachable(termsBox, error, () => void readTerms());
      return;
    }
    reading = "read";
    terms = state.state === "on" ? state.terms : null;
    form.hidden = terms === null;
    replace(termsBox, termsView(state));
  };

  addEventListener("online", () => {
    if (reading === "failed" && !root.hidden) void readTerms();
  });

  cancel.addEventListener("click", () => controller?.abort());

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (controller !== null || terms === null) return;
    void run();
  });

  const run = async () => {
    const current = new AbortController();
    controller = current;
    submit.disabled = true;
    cancel.hidden = false;
    cancel.disabled = false;
    cancel.focus();
    replace(progressText, "");
    let difficulty = 0;
    let started = 0;
    let shownAt = 0;
    let outcome: KeyRequestOutcome | null = null;
    try {
      outcome = await requestEvaluationKey({
        fetch: window.fetch.bind(window),
        sha256,
        signal: current.signal,
        onStep: (step, bits) => {
          if (step === "challenge") {
            say(status, "Asking the service for a challenge…");
          } else if (step === "work") {
            difficulty = bits ?? 0;
            started = performance.now();
            progress.hidden = false;
            progressText.hidden = false;
            replace(progressText, "Starting…");
            say(
              status,
              `Solving the proof of work in this browser: ${difficulty} bits, about ${expected(difficulty)} hashes on average…`,
            );
          } else {
            // The key may be issued from here on: cancelling would only lose it.
            cancel.disabled = true;
            progress.hidden = true;
            say(status, "Proof of work done. Asking for the key…");
          }
        },
        onProgress: (attempts) => {
          const at = performance.now();
          if (at - shownAt < PROGRESS_EVERY_MS) return;
          shownAt = at;
          const seconds = (at - started) / 1000;
          const rate = seconds > 0 ? Math.round(attempts / seconds) : 0;
          replace(
            progressText,
            `${attempts.toLocaleString("en")} hashes tried`,
            rate > 0 ? ` · about ${rate.toLocaleString("en")} a second here` : "",
            ` · ${expected(difficulty)} needed on average`,
            rate > 0 ? `, about ${formatWait(2 ** difficulty / rate)} at this speed` : "",
          );
        },
      });
    } catch (error) {
      replace(
        status,
        h(
          "div",
          { class: "callout callout--bad", id: "key-refusal", "data-code": "page_error" },
          h("p", {}, "The page failed while getting the key: ", String(error)),
        ),
      );
    } finally {
      controller = null;
      submit.disabled = false;
      cancel.hidden = true;
      progress.hidden = true;
      // The outcome says what the work came to (cancelled and too slow give the count).
      progressText.hidden = true;
    }
    if (outcome === null) {
      submit.focus();
      return;
    }
    if (outcome.kind === "issued") {
      replace(status, h("p", { class: "done" }, "Evaluation key issued. It is shown below, once."));
      const card = issuedCard(outcome.key, hooks);
      issued.prepend(card);
      submit.textContent = "Get another evaluation key";
      card.querySelector<HTMLElement>("h3")?.focus();
      return;
    }
    replace(status, outcomeView(outcome, terms));
    submit.focus();
  };

  replace(
    root,
    h("h2", { class: "panel__title" }, "Get an evaluation key"),
    h(
      "p",
      { class: "lead" },
      "An evaluation key lets you try this service's keyed API, such as “Verify on the server as well” in the Bundle tab, without asking its operator. It is issued here at once, for a small proof of work your browser does. ",
      h("strong", {}, "Checking bundles on this page needs no key."),
    ),
    h(
      "section",
      { class: "block", "aria-labelledby": "key-terms-title" },
      h("h3", { id: "key-terms-title" }, "Terms"),
      termsBox,
    ),
    form,
    issued,
  );

  return {
    shown() {
      if (reading === "idle" || reading === "failed") void readTerms();
    },
  };
}

function expected(difficulty: number): string {
  return (2 ** difficulty).toLocaleString("en");
}

/** Replaces the live status with one sentence. */
function say(status: HTMLElement, text: string): void {
  replace(status, h("p", { class: "working" }, text));
}

function renderUnreachable(box: HTMLElement, error: unknown, retry: () => void): void {
  const answered = error instanceof Error && error.message.startsWith("/info answered");
  replace(
    box,
    h(
      "div",
      { class: "callout callout--warn", id: "key-unavailable", "data-state": "unreachable" },
      h(
        "p",
        {},
        answered
          ? `This service's terms could not be read: ${error.message}.`
          : "This service's terms could not be read: GET /info got no answer (offline?).",
        " Evaluation keys come from the service, so getting one needs it; checking bundles on this page does not.",
      ),
      h("button", { type: "button", class: "button button--small", onclick: retry }, "Try again"),
    ),
  );
}

function termsView(state: TermsState): Child {
  if (state.state === "off") {
    return h(
      "div",
      { class: "callout callout--warn", id: "key-unavailable", "data-state": "off" },
      h(
        "p",
        {},
        "This service does not issue evaluation keys: its operator switched them off (",
        h("code", {}, "/info"),
        " says ",
        h("code", {}, "evaluation_keys: null"),
        "). Ask the operator for an API key. Checking bundles on this page needs none.",
      ),
    );
  }
  if (state.state === "unknown") {
    return h(
      "div",
      { class: "callout callout--warn", id: "key-unavailable", "data-state": "unknown" },
      h(
        "p",
        {},
        "This service does not say that it issues evaluation keys (its ",
        h("code", {}, "/info"),
        " has no usable ",
        h("code", {}, "evaluation_keys"),
        " terms). Ask its operator for an API key.",
      ),
    );
  }
  const { terms } = state;
  const row = (term: string, ...value: Child[]) => [h("dt", {}, term), h("dd", {}, value)];
  return h(
    "dl",
    { class: "facts facts--terms", id: "key-terms-list", "data-state": "on" },
    row(
      "Calls",
      `${plural(terms.keyDailyCap, "call")} per UTC day, on any route that takes a key (such as POST /verify)`,
    ),
    row(
      "Lifetime",
      `${plural(terms.keyLifetimeHours, "hour")} from issuance; then the key is refused (`,
      h("code", {}, "key_expired"),
      ")",
    ),
    row(
      "Per address",
      `${plural(terms.keysPerAddressDaily, "key")} per UTC day for each client address (an IPv6 /64 counts as one)${terms.keysPerNetworkDaily === null ? "" : `, ${plural(terms.keysPerNetworkDaily, "key")} for each network (an IPv4 /24, an IPv6 /48)`}; ${plural(terms.keysPerDay, "key")} a day for everyone together`,
    ),
    row(
      "Proof of work",
      `${terms.difficulty} bits: about ${expected(terms.difficulty)} SHA-256 hashes, computed by this browser (a challenge lasts ${formatWait(terms.challengeTtlSeconds)})${terms.rampBits > 0 ? `; it rises by up to ${terms.rampBits} bits as the day's keys run out, and each challenge says its own` : ""}`,
    ),
    row(
      "Shown once",
      "The key is shown only here, once. The service stores only its SHA-256 hash, so it can never show it again; this page stores it nowhere (no browser storage, no cookie), so it is gone when you leave or reload.",
    ),
    row(
      "Cost",
      "Free, never billed. Getting one counts as two calls (the challenge and the key) against the service's daily allowance of calls without a key.",
    ),
  );
}

/** What went wrong, in words, with the exact code and status. */
function outcomeView(
  outcome: Exclude<KeyRequestOutcome, { kind: "issued" }>,
  terms: EvaluationTerms | null,
): HTMLElement {
  switch (outcome.kind) {
    case "refused":
      return refusalView(outcome.refusal, outcome.step);
    case "cancelled":
      return h(
        "p",
        { class: "callout callout--warn", id: "key-refusal", "data-code": "cancelled" },
        "Cancelled. No key was asked for.",
      );
    case "unreachable":
      return h(
        "p",
        { class: "callout callout--warn", id: "key-refusal", "data-code": "unreachable" },
        outcome.step === "challenge"
          ? "The service could not be reached (offline?). No key was asked for."
          : "The service could not be reached while the key was asked for (offline?). If the request reached it, a key may have been issued and counted against this address's daily limit; it cannot be shown again.",
      );
    case "too_slow":
      return h(
        "p",
        { class: "callout callout--warn", id: "key-refusal", "data-code": "too_slow" },
        `This browser did not finish the proof of work (${outcome.difficulty} bits; ${outcome.attempts.toLocaleString("en")} hashes tried) before the challenge expired`,
        terms === null ? "" : ` (it lasts ${formatWait(terms.challengeTtlSeconds)})`,
        ". No key was asked for, and nothing was counted but the challenge. Try again, or use a faster device.",
      );
    case "unexpected":
      return h(
        "p",
        { class: "callout callout--bad", id: "key-refusal", "data-code": "unexpected" },
        `The service's answer could not be used: ${outcome.why} (HTTP ${outcome.status}).`,
      );
  }
}

/**
 * When a retry may come. Retry-After is whole seconds rounded up and counted from the
 * service's answer, so now + Retry-After lands up to a second past the moment the service
 * meant (a reset at 00:00 showed as 00:00:01): a wait of a minute or more is shown to the
 * nearest minute.
 */
function retryMoment(retryAfterSeconds: number): number {
  const moment = Date.now() + retryAfterSeconds * 1000;
  return retryAfterSeconds >= 60 ? Math.round(moment / 60_000) * 60_000 : moment;
}

function refusalView(refusal: Refusal, step: "challenge" | "issue"): HTMLElement {
  const facts: Child[] = [h("code", {}, refusal.code), ` · HTTP ${refusal.status}`];
  if (refusal.retryAfterSeconds !== null) {
    facts.push(
      ` · Retry-After: ${refusal.retryAfterSeconds.toLocaleString("en")} s (${formatUtc(retryMoment(refusal.retryAfterSeconds))})`,
    );
  }
  return h(
    "div",
    {
      class: `callout callout--${refusal.tryAgainNow ? "warn" : "bad"} refusal`,
      id: "key-refusal",
      "data-code": refusal.code,
      "data-status": refusal.status,
    },
    h(
      "p",
      { class: "refusal__words" },
      h("strong", {}, step === "challenge" ? "No challenge: " : "No key: "),
      refusal.words,
    ),
    h("p", { class: "refusal__code" }, facts),
    refusal.detail === null
      ? null
      : h("p", { class: "refusal__detail" }, "The service says: ", refusal.detail),
  );
}

function issuedCard(key: IssuedKey, hooks: KeyPanelHooks): HTMLElement {
  const id = uid("issued");
  const copyStatus = h("span", { class: "copy-status", role: "status" });
  const useStatus = h("div", { class: "issued__use", role: "status" });
  const expires = Date.parse(key.expiresAt);
  const copy = h(
    "button",
    {
      type: "button",
      class: "button button--small",
      onclick: () => {
        const refused = () => {
          copyStatus.textContent =
            "Copying is not allowed here: select the key (a click selects all of it) and copy it.";
        };
        if (navigator.clipboard === undefined) {
          refused();
          return;
        }
        navigator.clipboard.writeText(key.key).then(() => {
          copyStatus.textContent = "Copied.";
        }, refused);
      },
    },
    "Copy the key",
  );
  const use = h(
    "button",
    {
      type: "button",
      class: "button button--small button--quiet issued__use-button",
      onclick: () => {
        hooks.useKey(key.key);
        replace(
          useStatus,
          h(
            "p",
            { class: "callout callout--good" },
            "“Verify on the server as well” in the Bundle tab now has this key filled in, for this page only: it is kept in memory and forgotten when you leave or reload. ",
            h(
              "button",
              {
                type: "button",
                class: "button button--small",
                onclick: () => hooks.openBundleTab(),
              },
              "Open the Bundle tab",
            ),
          ),
        );
      },
    },
    "Use it to verify on the server here",
  );
  return h(
    "section",
    { class: "issued", "aria-labelledby": `${id}-title`, "data-key-id": key.id },
    h("h3", { id: `${id}-title`, tabindex: -1 }, "Your evaluation key"),
    h(
      "p",
      { class: "callout callout--warn" },
      h("strong", {}, "Shown only now. "),
      "Copy it somewhere safe: the service keeps only its hash and this page keeps it nowhere, so once you leave or reload it cannot be shown again.",
    ),
    h(
      "p",
      { class: "issued__key-line" },
      h("span", { class: "issued__label" }, "Key "),
      h("code", { class: "issued__key" }, key.key),
    ),
    h("div", { class: "row" }, copy, use, copyStatus),
    h(
      "dl",
      { class: "facts facts--issued" },
      h("dt", {}, "Expires"),
      h(
        "dd",
        { class: "issued__expires" },
        h("time", { datetime: key.expiresAt }, formatUtc(expires)),
        ` (in ${formatWait((expires - Date.now()) / 1000)})`,
      ),
      h("dt", {}, "Calls"),
      h("dd", {}, `${plural(key.dailyCap, "call")} per UTC day`),
      h("dt", {}, "Name"),
      h("dd", {}, h("code", {}, key.name), " (as the operator's key list shows it)"),
      h("dt", {}, "Billing"),
      h("dd", {}, "never billed"),
    ),
    useStatus,
  );
}
