/** Types of scripts/ensure-build.mjs, for the tests that import it. */
export declare const RUNTIME_SOURCE_DIRS: readonly string[];
export declare function staleReason(root: string): string | null;
export declare function build(root: string): number;
