/**
 * A few DOM helpers instead of a view library. Text always goes in as text nodes (never as
 * HTML), so nothing from a dropped file can become markup, and nothing sets a `style`
 * attribute, which the Content-Security-Policy forbids.
 */
export type Child = Node | string | number | null | undefined | false | Child[];

export type Props = Record<string, string | number | boolean | null | undefined | EventListener>;

/** `h("button", {class: "x", type: "button", onclick: fn}, "Label")`. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Props = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (value === null || value === undefined || value === false) continue;
    if (typeof value === "function") {
      element.addEventListener(name.replace(/^on/, ""), value);
    } else if (name === "value" || name === "checked") {
      (element as unknown as Record<string, unknown>)[name] = value;
    } else {
      element.setAttribute(name, value === true ? "" : String(value));
    }
  }
  append(element, children);
  return element;
}

export function append(parent: Node, children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(parent, child);
    else parent.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Replaces the content of `parent`. */
export function replace(parent: Element, ...children: Child[]): void {
  parent.replaceChildren();
  append(parent, children);
}

export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const element = document.getElementById(id);
  if (element === null) throw new Error(`#${id} is missing from the page`);
  return element as T;
}

let counter = 0;
/** A unique id for label/aria wiring. */
export function uid(prefix: string): string {
  counter += 1;
  return `${prefix}-${counter}`;
}

/** Lets the browser paint (a status line) before synchronous work starts. */
export function nextFrame(): Promise<void> {
  return new Promise((resolve) => {
    requestAnimationFrame(() => setTimeout(resolve, 0));
  });
}

/** A did:key shortened for display, with the whole value one click away. */
export function shortDid(did: string): HTMLElement {
  if (did.length <= 28) return h("code", { class: "did" }, did);
  const short = `${did.slice(0, 14)}…${did.slice(-6)}`;
  return h(
    "details",
    { class: "did" },
    h(
      "summary",
      { "aria-label": `${did} (shortened; open for the full key)` },
      h("code", {}, short),
    ),
    h("code", { class: "did__full" }, did),
  );
}

/** A long hex digest shortened, full on demand. */
export function shortHex(text: string, keep = 12): HTMLElement {
  if (text.length <= keep * 2 + 8) return h("code", { class: "hex" }, text);
  return h(
    "details",
    { class: "hex" },
    h("summary", {}, h("code", {}, `${text.slice(0, keep)}…${text.slice(-6)}`)),
    h("code", { class: "hex__full" }, text),
  );
}

/** Characters of a JSON text put on the page; the download and Copy have all of it. */
export const PREVIEW_CHARS = 16 * 1024;

/** A JSON text held as a Blob (a large result), with the start of it to show. */
export interface LargeText {
  preview: string;
  /** Whether `preview` is only the start of `full`. */
  cut: boolean;
  full: Blob;
  bytes: number;
}

/**
 * Copy and download buttons for a JSON text, and the text itself, cut to PREVIEW_CHARS: a
 * result of megabytes in the page would cost the browser more than anyone reads of it.
 */
export function jsonBlock(
  title: string,
  content: string | LargeText,
  fileName: string,
): HTMLElement {
  const large: LargeText =
    typeof content === "string"
      ? {
          preview: content.slice(0, PREVIEW_CHARS),
          cut: content.length > PREVIEW_CHARS,
          full: new Blob([content], { type: "application/json" }),
          bytes: new TextEncoder().encode(content).length,
        }
      : content;
  const status = h("span", { class: "copy-status", role: "status" });
  const copy = h(
    "button",
    {
      type: "button",
      class: "button button--small",
      onclick: () => {
        // A ClipboardItem takes the Blob as it is: the text is never copied into the page.
        const item = new ClipboardItem({ "text/plain": large.full });
        navigator.clipboard.write([item]).then(
          () => {
            status.textContent = "Copied.";
          },
          () => {
            status.textContent = "Copying is not allowed here; download it instead.";
          },
        );
      },
    },
    "Copy",
  );
  const download = h(
    "button",
    {
      type: "button",
      class: "button button--small",
      onclick: () => {
        const url = URL.createObjectURL(large.full);
        const link = h("a", { href: url, download: fileName });
        document.body.append(link);
        link.click();
        link.remove();
        setTimeout(() => URL.revokeObjectURL(url), 1000);
      },
    },
    `Download (${large.bytes.toLocaleString("en")} bytes)`,
  );
  return h(
    "details",
    { class: "json" },
    h("summary", {}, title),
    h("div", { class: "json__actions" }, copy, download, status),
    h("pre", { class: "json__text", tabindex: 0 }, large.preview),
    large.cut
      ? h(
          "p",
          { class: "muted json__more" },
          `Shown: the first ${large.preview.length.toLocaleString("en")} characters. Download or copy it for all ${large.bytes.toLocaleString("en")} bytes.`,
        )
      : null,
  );
}
