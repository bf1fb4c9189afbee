/**
 * The "Timestamp proof" tab: an OpenTimestamps proof (`.ots`) against a file hashed here or
 * a pasted digest, with optional Bitcoin block headers. Shows the status, every attestation
 * and, for Bitcoin ones, whether the merkle root its path reaches is the supplied header's.
 */
import { type ProofLeaf, parseOtsProof } from "../verifier/anchor/index.js";
import {
  blockHeaders,
  fileDigestForProof,
  hex,
  ReceiptdInputError,
  verifyAnchorJson,
} from "./api.js";
import { type Child, h, jsonBlock, nextFrame, replace, shortHex } from "./dom.js";
import { dropZone, type LoadedFile } from "./file-drop.js";
import { ANCHOR_STATUS_WORDS, anchorCodeWords, iconFor } from "./wording.js";

interface AnchorResultLike {
  status: string;
  code: string;
  detail: string;
  file_digest: string;
  attestations: { kind: string; value?: unknown; tag?: string; payload?: string }[];
  confirmed?: { block_height: number; merkle_root: string; header_time: number };
}

export function anchorPanel(root: HTMLElement): void {
  let proof: LoadedFile | null = null;
  let file: LoadedFile | null = null;
  const result = h("div", { class: "result", id: "anchor-result", "aria-live": "polite" });
  const modeFile = h("input", {
    type: "radio",
    name: "anchor-target",
    id: "anchor-mode-file",
    value: "file",
    checked: true,
  });
  const modeDigest = h("input", {
    type: "radio",
    name: "anchor-target",
    id: "anchor-mode-digest",
    value: "digest",
  });
  const digest = h("input", {
    type: "text",
    id: "anchor-digest",
    class: "input",
    spellcheck: "false",
    autocomplete: "off",
    placeholder: "sha256:… or hex",
  });
  const headers = h("textarea", {
    id: "anchor-headers",
    rows: 4,
    spellcheck: "false",
    autocomplete: "off",
    placeholder: '{"358391": "0200…"}  or  358391 0200…',
  });
  const fileStatus = h("p", { class: "muted", id: "anchor-file-status" }, "No file yet.");
  const proofStatus = h("p", { class: "muted", id: "anchor-proof-status" }, "No proof yet.");

  const run = async () => {
    if (proof === null) {
      replace(result, h("p", { class: "muted" }, "Add the .ots proof to check it."));
      return;
    }
    const useFile = modeFile.checked;
    if (useFile && file === null) {
      replace(
        result,
        h("p", { class: "muted" }, "Add the timestamped file, or paste its digest instead."),
      );
      return;
    }
    if (!useFile && digest.value.trim() === "") {
      replace(result, h("p", { class: "muted" }, "Paste the digest the proof should commit to."));
      return;
    }
    replace(
      result,
      h(
        "p",
        { class: "working" },
        useFile ? `Hashing ${file?.name} here and checking the proof…` : "Checking the proof…",
      ),
    );
    await nextFrame();
    let headerMap: Map<number | bigint, string | Uint8Array>;
    let text: string;
    let yourDigest: string;
    try {
      headerMap = blockHeaders(headers.value);
      yourDigest = useFile ? fileDigestForProof(proof.bytes, file!.bytes) : digest.value.trim();
      text = verifyAnchorJson(proof.bytes, { digest: yourDigest, headers: headerMap });
    } catch (error) {
      if (!(error instanceof ReceiptdInputError)) throw error;
      replace(result, h("p", { class: "callout callout--bad" }, error.message));
      return;
    }
    renderAnchor(
      result,
      proof,
      text,
      headerMap,
      useFile ? `${file!.name}, hashed here` : "the digest you pasted",
      yourDigest,
    );
  };

  digest.addEventListener("input", () => void run());
  headers.addEventListener("change", () => void run());
  modeFile.addEventListener("change", () => void run());
  modeDigest.addEventListener("change", () => void run());

  replace(
    root,
    h("h2", { class: "panel__title" }, "Check an OpenTimestamps proof"),
    h(
      "p",
      { class: "lead" },
      "Drop a detached ",
      h("code", {}, ".ots"),
      " proof and the file it timestamps (hashed here, never uploaded), or paste the digest. Add Bitcoin block headers to confirm the attestation.",
    ),
    dropZone({
      id: "anchor-proof",
      title: "Drop the .ots proof here",
      hint: "A detached OpenTimestamps proof.",
      accept: ".ots,application/octet-stream",
      onFiles: (files) => {
        proof = files[0]!;
        replace(proofStatus, `Proof: ${proof.name} (${proof.bytes.length} bytes).`);
        void run();
      },
    }),
    proofStatus,
    h(
      "fieldset",
      { class: "options" },
      h("legend", {}, "What it timestamps"),
      h(
        "div",
        { class: "check" },
        modeFile,
        h("label", { for: "anchor-mode-file" }, "A file (hashed in this browser)"),
      ),
      h(
        "div",
        { class: "check" },
        modeDigest,
        h("label", { for: "anchor-mode-digest" }, "A digest I paste"),
      ),
      dropZone({
        id: "anchor-file",
        title: "Drop the timestamped file here",
        hint: "Hashed with the proof's own hash (SHA-256, SHA-1 or RIPEMD-160).",
        accept: "*/*",
        onFiles: (files) => {
          file = files[0]!;
          modeFile.checked = true;
          replace(
            fileStatus,
            `File: ${file.name} (${file.bytes.length.toLocaleString("en")} bytes).`,
          );
          void run();
        },
      }),
      fileStatus,
      h("label", { for: "anchor-digest" }, "Digest"),
      digest,
    ),
    h(
      "fieldset",
      { class: "options" },
      h("legend", {}, "Bitcoin block headers (optional)"),
      h(
        "label",
        { for: "anchor-headers" },
        "Headers: JSON keyed by height (like headers.json), or one “height hex” per line",
      ),
      headers,
      dropZone({
        id: "anchor-headers-file",
        title: "Or load a headers file",
        hint: "Only the merkle root is compared: no proof-of-work or chain is checked.",
        accept: ".json,.txt,application/json,text/plain",
        onFiles: (files) => {
          headers.value = new TextDecoder().decode(files[0]!.bytes);
          void run();
        },
      }),
    ),
    result,
  );
  modeDigest.addEventListener("change", () => digest.focus());
}

function renderAnchor(
  output: HTMLElement,
  proof: LoadedFile,
  text: string,
  headers: Map<number | bigint, string | Uint8Array>,
  yourSource: string,
  yourDigest: string,
): void {
  const result = JSON.parse(text) as AnchorResultLike;
  const words = ANCHOR_STATUS_WORDS[result.status] ?? {
    tone: "neutral",
    title: result.status,
    sentence: "",
  };
  let leaves: ProofLeaf[] = [];
  try {
    leaves = parseOtsProof(proof.bytes).leaves;
  } catch {
    leaves = [];
  }
  const headerHex = new Map<string, string>();
  for (const [height, header] of headers) {
    headerHex.set(
      String(height),
      typeof header === "string" ? header.trim().toLowerCase() : hex(header),
    );
  }
  const rows = leaves.map((leaf, index) => {
    const attestation = leaf.attestation;
    let what: Child;
    let path: Child = "—";
    if (attestation.kind === "pending")
      what = ["Pending at ", h("code", { class: "wrap" }, attestation.value)];
    else if (attestation.kind === "unknown")
      what = ["Unknown attestation ", h("code", {}, attestation.tag)];
    else {
      what = [
        attestation.kind === "bitcoin" ? "Bitcoin" : "Litecoin",
        ` block ${String(attestation.value)}`,
      ];
      if (attestation.kind === "bitcoin") {
        const header = headerHex.get(String(attestation.value));
        if (header === undefined) path = "no header supplied for this height";
        else {
          const root = header.slice(72, 136);
          const matches = root === hex(leaf.message);
          path = h(
            "span",
            { class: `state state--${matches ? "good" : "bad"}` },
            matches
              ? "✓ reaches the header's merkle root"
              : "✗ differs from the header's merkle root",
          );
        }
      } else path = "not checked (only Bitcoin is)";
    }
    return h(
      "tr",
      { "data-kind": attestation.kind },
      h("td", {}, String(index + 1)),
      h("td", {}, what),
      h("td", {}, shortHex(hex(leaf.message), 10)),
      h("td", {}, path),
    );
  });
  replace(
    output,
    h(
      "div",
      {
        class: `verdict verdict--${words.tone}`,
        id: "anchor-verdict",
        "data-status": result.status,
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
          h("code", { class: "verdict__code" }, `${result.status} · ${result.code}`),
        ),
        h("p", { class: "verdict__sentence" }, anchorCodeWords(result.code) || words.sentence),
        h("p", { class: "verdict__detail" }, result.detail),
      ),
    ),
    h(
      "dl",
      { class: "facts" },
      h("dt", {}, "The proof is for"),
      h(
        "dd",
        {},
        result.file_digest === ""
          ? "— (the proof could not be read)"
          : shortHex(result.file_digest, 16),
      ),
      h("dt", {}, "Compared with"),
      h("dd", {}, yourSource, ": ", shortHex(yourDigest, 16)),
      result.confirmed === undefined
        ? null
        : [
            h("dt", {}, "Confirmed"),
            h(
              "dd",
              {},
              `Bitcoin block ${result.confirmed.block_height}, header time ${new Date(result.confirmed.header_time * 1000).toISOString()}`,
            ),
          ],
    ),
    leaves.length === 0
      ? null
      : h(
          "section",
          { class: "block" },
          h("h3", {}, `Attestations (${leaves.length})`),
          h(
            "div",
            { class: "table-scroll" },
            h(
              "table",
              { class: "table", id: "anchor-attestations" },
              h(
                "thead",
                {},
                h(
                  "tr",
                  {},
                  h("th", { scope: "col" }, "#"),
                  h("th", { scope: "col" }, "Attestation"),
                  h("th", { scope: "col" }, "Commits to"),
                  h("th", { scope: "col" }, "Merkle path"),
                ),
              ),
              h("tbody", {}, rows),
            ),
          ),
        ),
    h(
      "section",
      { class: "block" },
      jsonBlock(
        "Result JSON (what continuity-receipt-anchor verify --json prints)",
        text,
        "anchor-result.json",
      ),
    ),
  );
}
