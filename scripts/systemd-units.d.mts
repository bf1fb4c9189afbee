/** Types of scripts/systemd-units.mjs, for the runbook test that imports it. */
export interface UnitOptions {
  dir: string;
  node: string;
  user: string;
  envFile: string;
}
export declare const DEFAULTS: UnitOptions;
export declare function procfileEntries(text: string): { name: string; command: string }[];
export declare function systemdUnits(
  procfile: string,
  options?: UnitOptions,
): Record<string, string>;
