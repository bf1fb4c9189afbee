/** Types of scripts/chromium.mjs, for the test support that imports it. */
export declare const DEFAULT_CHROMIUM: string;
export declare function chromiumPath(env?: NodeJS.ProcessEnv): string;
export declare function missingChromium(env?: NodeJS.ProcessEnv): string | null;
