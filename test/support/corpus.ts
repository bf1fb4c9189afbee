/** The public conformance corpus, read from ../shared/corpus beside the checkout. */
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parseJson } from "../../src/verifier/json/parse.js";
import type { JsonValue } from "../../src/verifier/json/value.js";

export const CORPUS_DIR = fileURLToPath(new URL("../../../shared/corpus/", import.meta.url));

if (!existsSync(CORPUS_DIR)) {
  throw new Error(`the conformance corpus is expected at ${CORPUS_DIR} (../shared/corpus)`);
}

export function corpusPath(relative: string): string {
  return CORPUS_DIR + relative;
}

export function corpusBytes(relative: string): Buffer {
  return readFileSync(corpusPath(relative));
}

/** Corpus JSON in the verifier's value model (Maps, exact integers). */
export function corpusValue(relative: string): JsonValue {
  return parseJson(corpusBytes(relative));
}

/** Manifests are plain, trusted JSON: read them with JSON.parse for convenience. */
export function corpusManifest<T>(relative: string): T {
  return JSON.parse(readFileSync(corpusPath(relative), "utf8")) as T;
}

export interface BundleManifest {
  spec: string;
  vectors: {
    file: string;
    expected_verdict: string;
    expected_code: string | null;
    require_anchor: boolean;
  }[];
}

export const BUNDLE_MANIFESTS = [
  "vectors/manifest.json",
  "vectors/manifest-0.5.json",
  "vectors/manifest-0.6.json",
] as const;

export interface HostileIndex {
  cases: {
    index: number;
    file: string;
    case: string;
    expected_file: string;
    verdict: string;
    codes: string[];
  }[];
}

export interface HostileManifest {
  vectors: {
    case: string;
    require: string;
    expected_verdict?: string;
    expected_codes?: string[];
  }[];
}
