/**
 * The import boundaries of receiptd, checked by `npm run lint` (docs/service-layout.md,
 * "Boundaries"). Each rule names the layer it protects and why; a rule that should bend for
 * one file says so here, with that file, rather than in a comment somewhere else.
 *
 * Paths are relative to the repository root. Type-only imports are erased at compile time, so
 * the thread rules ignore them: they guard what runs, not what is named.
 */

/** Modules that run on a worker thread of the CPU pool (or only make sense there). */
const WORKER_SIDE = [
  // evaluation-keys has an `answer.ts` but no worker: its answer runs on the main thread.
  "^src/service/endpoints/(?!evaluation-keys/)[^/]+/(worker|answer)\\.ts$",
  // `tasks/worker.ts` reads `workerData` at module load: on the main thread it silently gets null.
  "^src/service/tasks/worker[^/]*\\.ts$",
  "^src/service/verification/[^/]*answer[^/]*\\.ts$",
  // The floor bench's own worker thread: it calls the shared verification the way a pool
  // worker does, to measure the service's floor without HTTP.
  "^bench/floor-worker\\.ts$",
];

/** The npm packages the verifier library may use (it is the published package: dependencies only). */
const VERIFIER_PACKAGES = "^node_modules/(@noble/curves|@noble/hashes|sodium-native)/";

/** Imports nothing at all: code that runs unchanged in the browser and in Node. */
const PORTABLE = "^src/portable/";

module.exports = {
  forbidden: [
    {
      name: "verifier-imports-only-itself",
      comment:
        "src/verifier is the published library (package.json exports): it must build and run " +
        "without the service, the storage or anything else of this repository.",
      severity: "error",
      from: { path: "^src/verifier/" },
      to: {
        pathNot: ["^src/verifier/", VERIFIER_PACKAGES],
        dependencyTypesNot: ["core"],
      },
    },
    {
      name: "endpoint-folders-are-private-to-the-service",
      comment:
        "An endpoint folder is the HTTP contract of one route; code that CLIs, queues or the " +
        "bench share with it is domain code and lives outside src/service (src/revocations, " +
        "src/conformance, …). Tests may reach in: they test the endpoint.",
      severity: "error",
      from: { pathNot: ["^src/service/", "^test/"] },
      to: { path: "^src/service/endpoints/" },
    },
    {
      name: "main-thread-does-not-run-worker-modules",
      comment:
        "Worker-side modules (an endpoint's worker.ts/answer.ts, tasks/worker*.ts, " +
        "verification/*answer*.ts) belong to the CPU pool. Imported on the main thread they " +
        "either read a null workerData or pull strict parsing and signatures onto the event " +
        "loop; the main thread reaches them through a task (defineTask), and shares " +
        "contract.ts/tasks.ts with them.",
      severity: "error",
      from: { path: "^(src|bench|scripts|queues)/", pathNot: WORKER_SIDE },
      to: { path: WORKER_SIDE, dependencyTypesNot: ["type-only"] },
    },
    {
      name: "endpoints-do-not-run-each-others-workers",
      comment:
        "One endpoint's worker-side files are that endpoint's; two endpoints that answer alike " +
        "share a domain function (src/service/verification), not each other's answer.ts.",
      severity: "error",
      from: { path: "^src/service/endpoints/([^/]+)/" },
      to: {
        path: "^src/service/endpoints/(?!evaluation-keys/)[^/]+/(worker|answer)\\.ts$",
        pathNot: "^src/service/endpoints/$1/",
        dependencyTypesNot: ["type-only"],
      },
    },
    {
      name: "no-folder-circles",
      comment:
        "Folders are layers; a circle between two folders means neither can be understood, " +
        "tested or moved without the other (queues/ → src/metrics → queues/ was one).",
      severity: "error",
      scope: "folder",
      from: { path: "^src/|^queues/" },
      to: { circular: true },
    },
    {
      name: "web-imports-only-the-verifier",
      comment:
        "src/web is bundled for the browser: it may use the verifier library, its own files " +
        "and src/portable (code that imports nothing), never the server.",
      severity: "error",
      // platform/buffer.ts is the one door to a package: the `buffer` polyfill the bundle injects.
      from: { path: "^src/web/", pathNot: "^src/web/platform/buffer\\.ts$" },
      to: {
        pathNot: ["^src/web/", "^src/verifier/", PORTABLE, "^node_modules/"],
      },
    },
    {
      name: "portable-imports-nothing",
      comment:
        "src/portable is what the browser and the server run alike (the evaluation-key proof " +
        "of work): no node: module, no package, no other folder, so both may import it.",
      severity: "error",
      from: { path: PORTABLE },
      to: { pathNot: PORTABLE },
    },
    {
      name: "bench-and-scripts-do-not-import-tests",
      comment:
        "bench/ and scripts/ ship in the build (dist/bench) and run without the test tree; " +
        "what both need lives in src/ or bench/.",
      severity: "error",
      from: { path: "^(bench|scripts)/" },
      to: { path: "^test/" },
    },
    {
      name: "queues-do-not-import-the-service",
      comment:
        "The queue processors run in `receiptd worker`, without Fastify: they use domain " +
        "modules (src/payments, src/storage), never src/service.",
      severity: "error",
      from: { path: "^queues/" },
      to: { path: "^src/service/" },
    },
    {
      name: "libraries-do-not-import-the-service-or-the-cli",
      comment:
        "Domain folders of src/ sit below the HTTP layer and the command line: a CLI and the " +
        "service both call them, so they cannot call either back.",
      severity: "error",
      from: { path: "^src/", pathNot: ["^src/service/", "^src/cli/"] },
      to: { path: ["^src/service/", "^src/cli/"] },
    },
    {
      name: "no-unresolvable-imports",
      comment: "An import that does not resolve fails at run time, not at build time.",
      severity: "error",
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: ["^bench/results/", "^dist/"] },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "require", "node", "default", "types"],
      extensions: [".ts", ".mts", ".js", ".mjs", ".d.ts", ".d.mts"],
    },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
