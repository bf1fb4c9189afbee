/**
 * How far the long generated runs go (issue 37): a seed-fixed sample in the unit lane, the
 * lane a developer runs in their loop, and the whole run in `npm test`, the other lanes and
 * named files. `scripts/run-tests.mjs` sets RECEIPTD_TEST_DEPTH (`--depth sample|full`
 * overrides); a file run directly (`node --import tsx --test …`) takes the sample unless
 * `RECEIPTD_TEST_DEPTH=full` is set.
 */
export const FULL_DEPTH = process.env.RECEIPTD_TEST_DEPTH === "full";

/**
 * All of `items` at full depth; else every `stride`-th, from the first. The items come from a
 * fixed seed, so the sample is the same on every run and a subset of the full run.
 */
export function sampleOf<T>(items: readonly T[], stride: number): T[] {
  return FULL_DEPTH ? [...items] : items.filter((_, index) => index % stride === 0);
}
