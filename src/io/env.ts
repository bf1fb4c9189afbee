/**
 * The process environment as the configuration readers take it: read-only, and any map of
 * names to values, so tests and CLIs pass their own instead of `process.env`.
 */
export type Env = Readonly<Record<string, string | undefined>>;
