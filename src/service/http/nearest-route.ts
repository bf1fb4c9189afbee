/**
 * The known route nearest to a path no route has (issue 37: `/verifyy` used to get a bare
 * 404), for `not_found`'s `did_you_mean`. A simple edit distance over the route list: each
 * route's path parameters take the asked path's segments at their places (so
 * `/revocation/did:key:…` is one edit from `/revocations/{issuer}`), and the route whose
 * filled-in path is fewest single-character edits away wins, when it is close enough to be
 * what was meant.
 *
 * An unknown path costs whoever sends it nothing (404s are not counted), so the work is
 * bounded: paths longer than `MAX_COMPARED_CHARACTERS` get no suggestion, and the distance is
 * computed only within a band of `MAX_EDITS` around the diagonal.
 */

/** At most this many edits between the asked path and a suggestion. */
const MAX_EDITS = 3;
/** Longer paths are not compared (an issuer's did:web is the longest the routes expect). */
const MAX_COMPARED_CHARACTERS = 512;

/** A route as registered: `/anchors/:digest`. */
interface KnownRoute {
  template: string;
  segments: string[];
}

/** `/anchors/:digest` → `/anchors/{digest}`, as /openapi.json writes paths. */
export function documentPath(template: string): string {
  return template.replace(/:([A-Za-z0-9_]+)/g, "{$1}");
}

/**
 * The Levenshtein distance between `a` and `b` when it is at most `limit`, else
 * `limit + 1`. Only cells within `limit` of the diagonal are computed.
 */
export function boundedEditDistance(a: string, b: string, limit: number): number {
  if (Math.abs(a.length - b.length) > limit) return limit + 1;
  const outside = limit + 1;
  let previous = new Array<number>(b.length + 1);
  let current = new Array<number>(b.length + 1);
  for (let j = 0; j <= b.length; j++) previous[j] = j <= limit ? j : outside;
  for (let i = 1; i <= a.length; i++) {
    const from = Math.max(1, i - limit);
    const to = Math.min(b.length, i + limit);
    current.fill(outside);
    current[0] = i <= limit ? i : outside;
    let best = current[0];
    for (let j = from; j <= to; j++) {
      const substitution = (previous[j - 1] ?? outside) + (a[i - 1] === b[j - 1] ? 0 : 1);
      const deletion = (previous[j] ?? outside) + 1;
      const insertion = (current[j - 1] ?? outside) + 1;
      const cell = Math.min(substitution, deletion, insertion, outside);
      current[j] = cell;
      if (cell < best) best = cell;
    }
    if (best > limit) return outside;
    [previous, current] = [current, previous];
  }
  return Math.min(previous[b.length] ?? outside, outside);
}

export class RouteList {
  readonly #routes: KnownRoute[] = [];

  /** Adds a route template; wildcard routes (static assets) are never suggested. */
  add(template: string): void {
    if (template.includes("*") || this.#routes.some((route) => route.template === template)) {
      return;
    }
    this.#routes.push({ template, segments: template.split("/") });
  }

  /**
   * The route template nearest to `path` (no query), or null when none is within a few edits
   * (and fewer than half the path's characters: `/x` is not "nearly" `/`).
   */
  nearest(path: string): string | null {
    if (path.length > MAX_COMPARED_CHARACTERS) return null;
    const asked = path.split("/");
    const limit = Math.min(MAX_EDITS, Math.ceil(path.length / 2) - 1);
    if (limit < 1) return null;
    let best: { template: string; distance: number } | null = null;
    for (const route of this.#routes) {
      const filled =
        route.segments.length === asked.length
          ? route.segments
              .map((segment, index) => (segment.startsWith(":") ? asked[index] : segment))
              .join("/")
          : route.template;
      if (filled === path) continue;
      // Case is one edit per letter, but `/VERIFY` is plainly `/verify`.
      const distance = boundedEditDistance(path.toLowerCase(), filled.toLowerCase(), limit);
      if (distance > limit) continue;
      if (best === null || distance < best.distance) best = { template: route.template, distance };
    }
    return best === null ? null : best.template;
  }
}
