/**
 * The pinned conformance corpus (verifier.md §9.1–§9.2, service.md §10): the three manifests
 * under `CORPUS_DIR`, read, checked and indexed once, with the digests the referee publishes.
 *
 * Only the manifests are read: the referee grades what a submitter's verifier said about the
 * vectors, never the vectors themselves. That is also why the bundle section holds 40 of the
 * 77 bundle vectors: `vectors/manifest.json` (spec 0.4) is the graded corpus, while
 * `manifest-0.5.json` and `manifest-0.6.json` list the other 37 for parity testing only.
 */
import { readFile } from "node:fs/promises";
import { basename, join } from "node:path";
import { VERDICTS, type Verdict } from "../verifier/bundle/result.js";
import { codedErrorClass } from "../verifier/coded-error.js";
import { sha256Digest } from "../verifier/crypto/digest.js";
import { compareCodePoints } from "../verifier/json/canonical.js";
import { parseJson, StrictJsonError } from "../verifier/json/parse.js";
import { isArray, isObject, type JsonObject, type JsonValue } from "../verifier/json/value.js";

/** The graded sections, named as in a submission's `results` and the report. */
export const SECTIONS = ["bundles", "verification_receipts", "hostile_inputs"] as const;
export type Section = (typeof SECTIONS)[number];

/** Where each section's manifest lives inside the corpus directory. */
export const MANIFEST_PATHS: Readonly<Record<Section, string>> = {
  bundles: "vectors/manifest.json",
  verification_receipts: "vectors/verification/manifest.json",
  hostile_inputs: "hostile/manifest.json",
};

/**
 * A bundle vector: the verdict, and the one code (if any) that must be among the codes; and
 * how a verifier is run over it (`--require-anchor`), which grading does not use.
 */
export interface BundleVector {
  id: string;
  verdict: Verdict;
  code: string | null;
  requireAnchor: boolean;
}

/**
 * A verification-receipt vector: validity and the exact error codes, sorted; and the files a
 * verifier is given with it (`--bundle`, `--revocations`, beside the receipt), which grading
 * does not use.
 */
export interface ReceiptVector {
  id: string;
  valid: boolean;
  errors: string[];
  bundleFile: string | null;
  revocationsFile: string | null;
}

/** A hostile input: always a structured outcome; a few cases also pin verdict and codes. */
export interface HostileVector {
  id: string;
  verdict: Verdict | null;
  /** Sorted; null when the manifest pins none. */
  codes: string[] | null;
}

export interface CorpusSection<Vector> {
  vectors: readonly Vector[];
  /** `sha256:` + hex SHA-256 of the manifest file's exact bytes. */
  manifestDigest: string;
}

/** The deployed sections; a section whose manifest file is absent is not deployed. */
export interface Corpus {
  bundles?: CorpusSection<BundleVector>;
  verification_receipts?: CorpusSection<ReceiptVector>;
  hostile_inputs?: CorpusSection<HostileVector>;
}

export interface CorpusSectionSummary {
  vectors: number;
  manifest_digest: string;
}

export type CorpusSummary = Partial<Record<Section, CorpusSectionSummary>>;

export type CorpusErrorCode = "corpus_invalid";
/** A manifest exists but cannot be graded against: an operator's error, never a client's. */
export class CorpusError extends codedErrorClass<CorpusErrorCode>("corpus_invalid") {
  override readonly name = "CorpusError";
}

/** Sorted the way Python's `sorted` orders strings (by code point). */
export function sortedCodes(codes: readonly string[]): string[] {
  return [...codes].sort(compareCodePoints);
}

class ManifestReader {
  constructor(readonly path: string) {}

  fail(message: string): never {
    throw new CorpusError(`${this.path}: ${message}`);
  }

  /** The `vectors` entries of a manifest object. */
  entries(manifest: JsonValue): JsonObject[] {
    if (!isObject(manifest)) this.fail("is not a JSON object");
    const vectors = manifest.get("vectors");
    if (!isArray(vectors)) this.fail("vectors is not a list");
    return vectors.map((entry, index) =>
      isObject(entry) ? entry : this.fail(`vectors[${index}] is not an object`),
    );
  }

  string(entry: JsonObject, name: string, index: number): string {
    const value = entry.get(name);
    if (typeof value !== "string" || value === "") {
      this.fail(`vectors[${index}].${name} is not a non-empty string`);
    }
    return value;
  }

  /** A companion file name: absent or null means none; anything else must name a file. */
  optionalFile(entry: JsonObject, name: string, index: number): string | null {
    const value = entry.get(name) ?? null;
    if (value === null) return null;
    // A name in the receipt's own folder, as the corpus lays them out.
    if (typeof value !== "string" || basename(value) !== value || value === "..") {
      this.fail(`vectors[${index}].${name} is not a file name`);
    }
    return value;
  }

  /** A flag: absent means false. */
  flag(entry: JsonObject, name: string, index: number): boolean {
    const value = entry.get(name) ?? false;
    if (typeof value !== "boolean") this.fail(`vectors[${index}].${name} is not a boolean`);
    return value;
  }

  verdict(value: JsonValue | undefined, where: string): Verdict {
    const verdict = VERDICTS.find((candidate) => candidate === value);
    if (verdict === undefined) this.fail(`${where} is not one of ${VERDICTS.join(", ")}`);
    return verdict;
  }

  codes(value: JsonValue | undefined, where: string): string[] {
    if (!isArray(value) || !value.every((code) => typeof code === "string")) {
      this.fail(`${where} is not a list of strings`);
    }
    return sortedCodes(value as string[]);
  }

  /** Ids name what a submission answers; a repeated one could not be graded once. */
  unique<Vector extends { id: string }>(vectors: Vector[]): Vector[] {
    const seen = new Set<string>();
    for (const { id } of vectors) {
      if (seen.has(id)) this.fail(`${id} is listed twice`);
      seen.add(id);
    }
    return vectors;
  }
}

function bundleVectors(reader: ManifestReader, manifest: JsonValue): BundleVector[] {
  return reader.unique(
    reader.entries(manifest).map((entry, index) => {
      const code = entry.get("expected_code") ?? null;
      if (code !== null && typeof code !== "string") {
        reader.fail(`vectors[${index}].expected_code is neither a string nor null`);
      }
      return {
        id: reader.string(entry, "file", index),
        verdict: reader.verdict(
          entry.get("expected_verdict"),
          `vectors[${index}].expected_verdict`,
        ),
        code,
        requireAnchor: reader.flag(entry, "require_anchor", index),
      };
    }),
  );
}

function receiptVectors(reader: ManifestReader, manifest: JsonValue): ReceiptVector[] {
  return reader.unique(
    reader.entries(manifest).map((entry, index) => {
      const valid = entry.get("expected_valid");
      if (typeof valid !== "boolean")
        reader.fail(`vectors[${index}].expected_valid is not a boolean`);
      return {
        id: reader.string(entry, "file", index),
        valid,
        errors: reader.codes(entry.get("expected_errors"), `vectors[${index}].expected_errors`),
        bundleFile: reader.optionalFile(entry, "bundle_file", index),
        revocationsFile: reader.optionalFile(entry, "revocations_file", index),
      };
    }),
  );
}

function hostileVectors(reader: ManifestReader, manifest: JsonValue): HostileVector[] {
  return reader.unique(
    reader.entries(manifest).map((entry, index) => {
      // "structured" is the only requirement the grading rules know; refusing any other keeps
      // the referee from certifying what it did not check.
      if (entry.get("require") !== "structured") {
        reader.fail(`vectors[${index}].require is not "structured"`);
      }
      const verdict = entry.get("expected_verdict");
      const codes = entry.get("expected_codes");
      return {
        id: reader.string(entry, "case", index),
        verdict:
          verdict === undefined
            ? null
            : reader.verdict(verdict, `vectors[${index}].expected_verdict`),
        codes: codes === undefined ? null : reader.codes(codes, `vectors[${index}].expected_codes`),
      };
    }),
  );
}

function isMissingFile(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  return code === "ENOENT" || code === "ENOTDIR";
}

/** The manifest's bytes, or null when the file (or the directory) does not exist. */
async function readManifest(path: string): Promise<Buffer | null> {
  try {
    return await readFile(path);
  } catch (error) {
    if (isMissingFile(error)) return null;
    throw new CorpusError(`${path}: ${(error as Error).message}`);
  }
}

function parseManifest(path: string, bytes: Buffer): JsonValue {
  try {
    return parseJson(bytes);
  } catch (error) {
    if (error instanceof StrictJsonError) throw new CorpusError(`${path}: ${error.message}`);
    throw error;
  }
}

type VectorReader<Vector> = (reader: ManifestReader, manifest: JsonValue) => Vector[];

/** One section, or undefined when its manifest is not deployed. */
async function readSection<Vector>(
  corpusDir: string,
  name: Section,
  readVectors: VectorReader<Vector>,
): Promise<CorpusSection<Vector> | undefined> {
  const path = join(corpusDir, MANIFEST_PATHS[name]);
  const bytes = await readManifest(path);
  if (bytes === null) return undefined;
  return {
    vectors: readVectors(new ManifestReader(path), parseManifest(path, bytes)),
    manifestDigest: sha256Digest(bytes),
  };
}

/**
 * Reads and indexes the corpus at `corpusDir`. Null when no manifest is there (nothing is
 * deployed); throws `CorpusError` for a manifest that exists but cannot be graded against.
 */
export async function loadCorpus(corpusDir: string): Promise<Corpus | null> {
  const corpus: Corpus = {
    bundles: await readSection(corpusDir, "bundles", bundleVectors),
    verification_receipts: await readSection(corpusDir, "verification_receipts", receiptVectors),
    hostile_inputs: await readSection(corpusDir, "hostile_inputs", hostileVectors),
  };
  return SECTIONS.some((name) => corpus[name] !== undefined) ? corpus : null;
}

/** Where the materialised hostile inputs are listed (verifier.md §9.2): case label → file. */
export const HOSTILE_INDEX_PATH = "hostile/index.json";

/**
 * The input file of each hostile case, relative to the corpus directory, from
 * `hostile/index.json` (`{cases: [{case, file}]}`, files under `hostile/`). The referee never
 * needs it; a submitter runs its verifier over these files. Throws `CorpusError` when the
 * index is missing or malformed.
 */
export async function loadHostileCaseFiles(corpusDir: string): Promise<Map<string, string>> {
  const path = join(corpusDir, HOSTILE_INDEX_PATH);
  const bytes = await readManifest(path);
  if (bytes === null) {
    throw new CorpusError(`${path}: not found (the hostile inputs are not materialised)`);
  }
  // Annotated, so its `never`-returning fail() narrows what follows.
  const reader: ManifestReader = new ManifestReader(path);
  const index = parseManifest(path, bytes);
  const cases = isObject(index) ? index.get("cases") : undefined;
  if (!isArray(cases)) reader.fail("cases is not a list");
  const files = new Map<string, string>();
  cases.forEach((entry, position) => {
    if (!isObject(entry)) reader.fail(`cases[${position}] is not an object`);
    const label = entry.get("case");
    const file = entry.get("file");
    if (typeof label !== "string" || label === "") {
      reader.fail(`cases[${position}].case is not a non-empty string`);
    }
    if (typeof file !== "string" || !/^cases\/[^/\\]+$/.test(file)) {
      reader.fail(`cases[${position}].file is not a file under cases/`);
    }
    if (files.has(label)) reader.fail(`${label} is listed twice`);
    files.set(label, join("hostile", file));
  });
  return files;
}

/** `{<section>: {vectors, manifest_digest}}` for the deployed sections, in section order. */
export function summarizeCorpus(corpus: Corpus): CorpusSummary {
  const summary: CorpusSummary = {};
  for (const name of SECTIONS) {
    const deployed = corpus[name];
    if (deployed === undefined) continue;
    summary[name] = {
      vectors: deployed.vectors.length,
      manifest_digest: deployed.manifestDigest,
    };
  }
  return summary;
}

/**
 * What `/info` publishes as `conformance.corpus`: null when nothing is deployed. Reads the
 * manifests with async I/O (safe on the main thread); throws `CorpusError` like `loadCorpus`.
 */
export async function loadCorpusSummary(corpusDir: string): Promise<CorpusSummary | null> {
  const corpus = await loadCorpus(corpusDir);
  return corpus === null ? null : summarizeCorpus(corpus);
}

/**
 * A per-thread memo of `loadCorpus`: the manifests are read and indexed on first use, then
 * reused by every request. A corpus found missing, or a failed load, is looked for again on
 * the next request, so deploying or repairing the corpus needs no restart.
 */
export function corpusLoader(corpusDir: string | null): () => Promise<Corpus | null> {
  let loaded: Promise<Corpus | null> | null = null;
  return async () => {
    if (corpusDir === null) return null;
    loaded ??= loadCorpus(corpusDir);
    try {
      const corpus = await loaded;
      if (corpus === null) loaded = null;
      return corpus;
    } catch (error) {
      loaded = null;
      throw error;
    }
  };
}
