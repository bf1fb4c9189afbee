/**
 * The "Verification receipt" tab: is a signed verification receipt (`POST /verify?receipt=1`)
 * valid, who issued it (compared with this service's `/info`), does it match a bundle, and
 * was its issuer's key revoked.
 */
import { ReceiptdInputError, type RevocationInput, verifyReceiptJson } from "./api.js";
import { bundleState } from "./bundle-panel.js";
import { type Child, h, jsonBlock, nextFrame, replace, shortDid } from "./dom.js";
import { dropZone, type LoadedFile, renderFileList } from "./file-drop.js";
import { serviceInfo, serviceRevocations } from "./service.js";
import { iconFor, receiptCheckWords, type Tone, VERDICT_WORDS } from "./wording.js";

interface ReceiptCheckResult {
  valid: boolean;
  errors: string[];
  issuer: unknown;
  verdict: unknown;
  verified_at: unknown;
  bundle_digest: unknown;
  digest_match: boolean | null;
}

export interface ReceiptPanel {
  /** Loads a receipt (and the bundle it should describe) and checks it. */
  load(receipt: LoadedFile, bundle: LoadedFile | null): void;
}

export function receiptPanel(root: HTMLElement): ReceiptPanel {
  let receipt: LoadedFile | null = null;
  let bundle: LoadedFile | null = null;
  const revocations: LoadedFile[] = [];
  const result = h("div", { class: "result", id: "receipt-result", "aria-live": "polite" });
  const bundleStatus = h(
    "p",
    { class: "muted", id: "receipt-bundle-status" },
    "No bundle: the digest is not compared.",
  );
  const revocationList = h("ul", { class: "file-list" });
  const useService = h("input", {
    type: "checkbox",
    id: "receipt-service-revocations",
    checked: true,
  });
  const pasted = h("textarea", {
    id: "receipt-text",
    rows: 6,
    spellcheck: "false",
    autocomplete: "off",
  });

  // Checks wait for the service (its revocation document, /info): a check started later
  // may finish first, so only the latest one draws its result, as in the bundle panel.
  let runs = 0;
  const run = async () => {
    if (receipt === null) return;
    const thisRun = ++runs;
    replace(result, h("p", { class: "working" }, `Checking ${receipt.name}…`));
    await nextFrame();
    await check(result, receipt, bundle, revocations, useService.checked, () => thisRun === runs);
  };
  const setBundle = (file: LoadedFile | null) => {
    bundle = file;
    replace(
      bundleStatus,
      file === null ? "No bundle: the digest is not compared." : `Compared with ${file.name}.`,
    );
  };
  const renderRevocations = () => renderFileList(revocationList, revocations, () => void run());
  useService.addEventListener("change", () => void run());

  replace(
    root,
    h("h2", { class: "panel__title" }, "Check a verification receipt"),
    h(
      "p",
      { class: "lead" },
      "A verification receipt is the signed record receiptd returns with ",
      h("code", {}, "?receipt=1"),
      ". Check its signature, who issued it, whether it describes your bundle, and whether its issuer's key was revoked.",
    ),
    dropZone({
      id: "receipt-file",
      title: "Drop a verification receipt (.json) here",
      hint: "Read only by this page.",
      accept: ".json,application/json",
      onFiles: (files) => {
        receipt = files[0]!;
        void run();
      },
    }),
    h(
      "details",
      { class: "paste" },
      h("summary", {}, "Paste JSON instead"),
      h("label", { for: "receipt-text" }, "Verification receipt JSON"),
      pasted,
      h(
        "button",
        {
          type: "button",
          class: "button",
          onclick: () => {
            receipt = { name: "pasted receipt", bytes: new TextEncoder().encode(pasted.value) };
            void run();
          },
        },
        "Check pasted JSON",
      ),
    ),
    h(
      "fieldset",
      { class: "options" },
      h("legend", {}, "Compare with"),
      dropZone({
        id: "receipt-bundle",
        title: "The bundle it describes (optional)",
        hint: "Its digest must equal the receipt's bundle_digest.",
        accept: ".json,application/json",
        onFiles: (files) => {
          setBundle(files[0]!);
          void run();
        },
      }),
      h(
        "div",
        { class: "row" },
        bundleStatus,
        h(
          "button",
          {
            type: "button",
            class: "button button--small",
            onclick: () => {
              setBundle(bundleState.bundle);
              void run();
            },
          },
          "Use the bundle from the Bundle tab",
        ),
      ),
      h("p", { class: "options__label" }, "Revocation documents"),
      dropZone({
        id: "receipt-revocations",
        title: "Add revocation documents",
        hint: "Checked as with --revocations.",
        accept: ".json,application/json",
        multiple: true,
        onFiles: (files) => {
          revocations.push(...files);
          renderRevocations();
          void run();
        },
      }),
      revocationList,
      h(
        "div",
        { class: "check" },
        useService,
        h(
          "label",
          { for: "receipt-service-revocations" },
          "Also use the revocation document this service publishes for the issuer ",
          h(
            "span",
            { class: "muted" },
            "(GET /revocations/…; sends the issuer's key, not the receipt)",
          ),
        ),
      ),
    ),
    result,
  );

  return {
    load(file, withBundle) {
      receipt = file;
      setBundle(withBundle);
      void run();
    },
  };
}

async function check(
  output: HTMLElement,
  receipt: LoadedFile,
  bundle: LoadedFile | null,
  revocations: LoadedFile[],
  useService: boolean,
  isLatest: () => boolean,
): Promise<void> {
  const sources: RevocationInput[] = revocations.map((file) => ({
    name: file.name,
    data: file.bytes,
  }));
  const notes: Child[] = [];
  const issuer = issuerOf(receipt.bytes);
  if (useService && issuer !== null) {
    const lookup = await serviceRevocations(issuer);
    if (lookup.found) {
      sources.push({ name: lookup.url, data: lookup.bytes });
      notes.push(
        h(
          "li",
          {},
          "Used this service's revocation document for the issuer (",
          h("code", { class: "wrap" }, lookup.url),
          ").",
        ),
      );
    } else {
      notes.push(h("li", {}, `This service's revocation document was not used: ${lookup.why}.`));
    }
  }
  let text: string;
  try {
    text = verifyReceiptJson(receipt.bytes, {
      bundle: bundle?.bytes,
      revocations: sources,
    });
  } catch (error) {
    if (!(error instanceof ReceiptdInputError)) throw error;
    if (!isLatest()) return;
    replace(
      output,
      h(
        "div",
        { class: "verdict verdict--bad", id: "receipt-verdict", "data-valid": "false" },
        h("span", { class: "verdict__icon", "aria-hidden": "true" }, "✗"),
        h(
          "div",
          {},
          h("p", { class: "verdict__word" }, "Cannot be checked"),
          h("p", { class: "verdict__sentence" }, error.message, " (the CLI exits with status 2)."),
        ),
      ),
    );
    return;
  }
  const checked = JSON.parse(text) as ReceiptCheckResult;
  let info: { issuer: string | null } | null = null;
  try {
    info = await serviceInfo();
  } catch {
    info = null;
  }
  if (!isLatest()) return;
  const tone: Tone = checked.valid ? "good" : "bad";
  const revoked = checked.errors.includes("key_revoked");
  const rows: Child[] = [];
  const row = (term: string, value: Child, state?: Tone) =>
    rows.push(
      h("dt", {}, term),
      h(
        "dd",
        { class: state === undefined ? "" : `state state--${state}` },
        state === undefined ? null : h("span", { "aria-hidden": "true" }, `${iconFor(state)} `),
        value,
      ),
    );
  const signatureBad =
    checked.errors.includes("bad_signature") || checked.errors.includes("bad_signature_shape");
  row("Signature", signatureBad ? "does not verify" : "verifies", signatureBad ? "bad" : "good");
  const issuerText = typeof checked.issuer === "string" ? checked.issuer : null;
  let issuerNote: Child;
  let issuerTone: Tone = "neutral";
  if (issuerText === null) issuerNote = "no issuer";
  else if (info === null)
    issuerNote = [
      shortDid(issuerText),
      " — this service's key could not be read (GET /info failed)",
    ];
  else if (info.issuer === issuerText) {
    issuerNote = [shortDid(issuerText), " — this service's current key"];
    issuerTone = "good";
  } else {
    issuerNote = [
      shortDid(issuerText),
      " — not this service's current key",
      info.issuer === null ? "" : [" (", shortDid(info.issuer), ")"],
    ];
    issuerTone = "warn";
  }
  rows.push(
    h("dt", {}, "Issuer"),
    h("dd", { class: `state state--${issuerTone}`, id: "receipt-issuer" }, issuerNote),
  );
  if (checked.digest_match === null) row("Bundle", "not compared (no bundle given)");
  else
    row(
      "Bundle",
      checked.digest_match ? "matches the bundle given" : "does not match the bundle given",
      checked.digest_match ? "good" : "bad",
    );
  const revocationCount = sources.length;
  if (revoked) row("Issuer revoked", "yes — its key had been revoked before it signed", "bad");
  else if (revocationCount === 0) row("Issuer revoked", "not checked (no revocation document)");
  else
    row(
      "Issuer revoked",
      `no, per ${revocationCount} revocation document${revocationCount === 1 ? "" : "s"}`,
      checked.errors.includes("bad_revocation") ? "warn" : "good",
    );
  const recorded =
    typeof checked.verdict === "string"
      ? (VERDICT_WORDS[checked.verdict]?.title ?? checked.verdict)
      : "—";
  row(
    "Verdict it records",
    typeof checked.verdict === "string" ? [recorded, " ", h("code", {}, checked.verdict)] : "—",
  );
  row("Verified at", typeof checked.verified_at === "string" ? checked.verified_at : "—");

  replace(
    output,
    h(
      "div",
      {
        class: `verdict verdict--${tone}`,
        id: "receipt-verdict",
        "data-valid": String(checked.valid),
      },
      h("span", { class: "verdict__icon", "aria-hidden": "true" }, iconFor(tone)),
      h(
        "div",
        {},
        h(
          "p",
          { class: "verdict__word" },
          checked.valid ? "Valid" : "Not valid",
          " ",
          h("code", { class: "verdict__code" }, `valid: ${checked.valid}`),
        ),
        h(
          "p",
          { class: "verdict__sentence" },
          checked.valid
            ? "The receipt is intact and signed by its issuer, and no check failed."
            : "At least one check failed: do not rely on this receipt.",
        ),
      ),
    ),
    h("dl", { class: "facts facts--receipt" }, rows),
    checked.errors.length === 0
      ? null
      : h(
          "section",
          { class: "block" },
          h("h3", {}, "Findings"),
          h(
            "ul",
            { class: "findings", id: "receipt-findings" },
            checked.errors.map((code) =>
              h(
                "li",
                { class: "finding finding--bad", "data-code": code },
                h("span", { class: "finding__icon", "aria-hidden": "true" }, "✗"),
                h(
                  "div",
                  {},
                  h("p", { class: "finding__words" }, receiptCheckWords(code)),
                  h("p", { class: "finding__code" }, h("code", {}, code)),
                ),
              ),
            ),
          ),
        ),
    notes.length === 0 ? null : h("ul", { class: "notes" }, notes),
    h(
      "section",
      { class: "block" },
      jsonBlock(
        "Result JSON (what continuity-receipt-verify-receipt prints)",
        text,
        "receipt-check.json",
      ),
    ),
  );
}

/** The receipt's `issuer`, to look up its revocation document; null when it has none. */
function issuerOf(bytes: Uint8Array): string | null {
  try {
    const value: unknown = JSON.parse(new TextDecoder().decode(bytes));
    if (typeof value === "object" && value !== null && "issuer" in value) {
      const issuer = (value as { issuer: unknown }).issuer;
      return typeof issuer === "string" && issuer.startsWith("did:key:") ? issuer : null;
    }
  } catch {
    return null;
  }
  return null;
}
