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

/** Copy and download buttons for a JSON text. */
export function jsonBlock(title: string, text: string, fileName: string): HTMLElement {
  const status = h("span", { class: "copy-status", role: "status" });
  const copy = h(
    "button",
    {
      type: "button",
      class: "button button--small",
      onclick: () => {
        navigator.clipboard.writeText(text).then(
          () => {
            status.textContent = "Copied.";
          },
          () => {
            status.textContent = "Copying is not allowed here; select the text instead.";
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
        const url = URL.createObjectURL(new Blob([text], { type: "application/json" }));
        const link = h("a", { href: url, download: fileName });
        document.body.append(link);
        link.click();
        link.remove();
        setTimeout(() => URL.revokeObjectURL(url), 1000);
      },
    },
    "Download",
  );
  return h(
    "details",
    { class: "json" },
    h("summary", {}, title),
    h("div", { class: "json__actions" }, copy, download, status),
    h("pre", { class: "json__text", tabindex: 0 }, text),
  );
}
