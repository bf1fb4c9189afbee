/**
 * A drop zone: a real file input (so keyboard users tab to it and press Enter or Space)
 * behind a large label that also takes dropped files, or dropped text.
 */
import { h, replace } from "./dom.js";

export interface LoadedFile {
  name: string;
  bytes: Uint8Array;
}

export interface DropZoneOptions {
  id: string;
  title: string;
  hint: string;
  accept: string;
  multiple?: boolean;
  /** Called with the files read into memory (nothing leaves the page). */
  onFiles: (files: LoadedFile[]) => void;
}

export async function readFiles(files: Iterable<File>): Promise<LoadedFile[]> {
  const loaded: LoadedFile[] = [];
  for (const file of files) {
    loaded.push({ name: file.name, bytes: new Uint8Array(await file.arrayBuffer()) });
  }
  return loaded;
}

export function dropZone(options: DropZoneOptions): HTMLElement {
  const hintId = `${options.id}-hint`;
  const input = h("input", {
    type: "file",
    id: options.id,
    class: "drop__input",
    accept: options.accept,
    multiple: options.multiple ?? false,
    "aria-describedby": hintId,
  });
  const zone = h(
    "div",
    { class: "drop" },
    input,
    h(
      "label",
      { for: options.id, class: "drop__label" },
      h("span", { class: "drop__title" }, options.title),
      h("span", { class: "drop__choose" }, options.multiple ? "Choose files" : "Choose a file"),
    ),
    h("p", { class: "drop__hint", id: hintId }, options.hint),
  );
  const deliver = (files: File[]) => {
    if (files.length === 0) return;
    readFiles(options.multiple ? files : files.slice(0, 1)).then(options.onFiles, (error) => {
      zone.dataset.error = String(error);
    });
  };
  input.addEventListener("change", () => {
    deliver([...(input.files ?? [])]);
    input.value = "";
  });
  zone.addEventListener("dragover", (event) => {
    event.preventDefault();
    zone.classList.add("drop--over");
  });
  zone.addEventListener("dragleave", () => zone.classList.remove("drop--over"));
  zone.addEventListener("drop", (event) => {
    event.preventDefault();
    zone.classList.remove("drop--over");
    const transfer = event.dataTransfer;
    if (transfer === null) return;
    if (transfer.files.length > 0) {
      deliver([...transfer.files]);
      return;
    }
    const dropped = transfer.getData("text/plain");
    if (dropped !== "") {
      options.onFiles([{ name: "dropped text", bytes: new TextEncoder().encode(dropped) }]);
    }
  });
  return zone;
}

/**
 * Shows `files` in `list`, each with a Remove button that takes it out of `files`, shows the
 * list again and calls `onRemove` (the panels re-verify with what is left).
 */
export function renderFileList(list: HTMLElement, files: LoadedFile[], onRemove: () => void): void {
  replace(
    list,
    files.map((file, index) =>
      h(
        "li",
        {},
        h("span", {}, file.name),
        " ",
        h(
          "button",
          {
            type: "button",
            class: "button button--small button--quiet",
            "aria-label": `Remove ${file.name}`,
            onclick: () => {
              files.splice(index, 1);
              renderFileList(list, files, onRemove);
              onRemove();
            },
          },
          "Remove",
        ),
      ),
    ),
  );
}
