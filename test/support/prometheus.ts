/** Reads the Prometheus text format well enough for tests to look samples up. */

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

export function parseExposition(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const match = SAMPLE.exec(line);
    if (match === null) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, name, value] of (match[2] ?? "").matchAll(LABEL)) {
      if (name !== undefined && value !== undefined) labels[name] = value;
    }
    samples.push({ name: match[1] ?? "", labels, value: Number(match[3]) });
  }
  return samples;
}

/** The samples named `name` whose labels include `labels`. */
export function samplesOf(
  samples: readonly Sample[],
  name: string,
  labels: Record<string, string> = {},
): Sample[] {
  return samples.filter(
    (sample) =>
      sample.name === name &&
      Object.entries(labels).every(([label, value]) => sample.labels[label] === value),
  );
}

/** The value of the one sample `name{labels}`; throws when there is none or several. */
export function sampleValue(
  samples: readonly Sample[],
  name: string,
  labels: Record<string, string> = {},
): number {
  const found = samplesOf(samples, name, labels);
  if (found.length !== 1) {
    throw new Error(`${found.length} samples of ${name} ${JSON.stringify(labels)}`);
  }
  return found[0]?.value ?? Number.NaN;
}

/** Names of the metric families the text declares (`# TYPE` lines). */
export function familiesOf(text: string): Set<string> {
  return new Set([...text.matchAll(/^# TYPE (\S+) /gm)].map((match) => match[1] ?? ""));
}
