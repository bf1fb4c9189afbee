#!/usr/bin/env node
// The verification page (`GET /`): bundles src/web/ with esbuild into dist/web/.
//
//   dist/web/index.html               references the assets by name, with SRI hashes
//   dist/web/assets/app-<hash>.js     the page and the verifier (src/verifier), minified
//   dist/web/assets/worker-<hash>.js  the Bundle tab's Web Worker: the verifier again, and
//                                     the chain model (the page's script names it, with
//                                     its SRI hash, and fetches it at load)
//   dist/web/assets/app-<hash>.css
//   dist/web/*.gz, *.br               pre-compressed copies (@fastify/static serves them)
//   dist/web/build.json               asset names and sizes, read by the page route
//
// Asset names carry a hash of their content, so the server can let browsers keep them for a
// year. Two substitutions make it a browser build of the same verifier:
// - `src/verifier/crypto/platform.js` resolves to `platform.browser.ts` (@noble instead of
//   libsodium and node:crypto; see src/verifier/crypto/provider.ts): the build fails if the
//   bundle holds sodium-native or either server implementation;
// - `Buffer` is src/web/platform/buffer.ts, injected.
// `node:crypto` itself still appears in src/verifier's signing code, which the page never
// calls: it resolves to a stub whose every export throws, and the build fails unless
// tree-shaking removed all of it, so no path of the page can reach node:crypto.
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { basename, dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { brotliCompressSync, constants, gzipSync } from "node:zlib";
import { build } from "esbuild";

const STUB_NAMESPACE = "receiptd-unavailable";
/** The stub's message: the build fails when it is in the output. */
const STUB_MESSAGE = "is not available in the receiptd page";
/** Everything src/ imports from node:crypto (a missing name fails the build loudly). */
const NODE_CRYPTO_NAMES = [
  "createHash",
  "createPrivateKey",
  "createPublicKey",
  "generateKeyPairSync",
  "hash",
  "randomBytes",
  "sign",
  "verify",
];

/** Resolves `x.js` to a sibling `x.browser.ts` when there is one, and stubs node:crypto. */
function browserPlatform(root) {
  const source = `${join(root, "src")}/`;
  return {
    name: "receiptd-browser-platform",
    setup(builder) {
      builder.onResolve({ filter: /^\.{1,2}\/.*\.js$/ }, (args) => {
        if (!args.importer.startsWith(source)) return undefined;
        const candidate = join(args.resolveDir, args.path.replace(/\.js$/, ".browser.ts"));
        return existsSync(candidate) ? { path: candidate } : undefined;
      });
      builder.onResolve({ filter: /^node:crypto$/ }, (args) => ({
        path: args.path,
        namespace: STUB_NAMESPACE,
      }));
      builder.onLoad({ filter: /.*/, namespace: STUB_NAMESPACE }, (args) => ({
        contents: NODE_CRYPTO_NAMES.map(
          (name) =>
            `export function ${name}() { throw new Error("${args.path}.${name} ${STUB_MESSAGE}"); }`,
        ).join("\n"),
        loader: "js",
      }));
      builder.onResolve({ filter: /^node:/ }, (args) => ({
        errors: [
          { text: `${args.path} cannot be used by the page (imported by ${args.importer})` },
        ],
      }));
    },
  };
}

function outputsOf(result, outdir) {
  return Object.fromEntries(
    result.outputFiles.map((file) => [relative(outdir, file.path), file.contents]),
  );
}

function findOutput(outputs, pattern, what) {
  const name = Object.keys(outputs).find((candidate) => pattern.test(candidate));
  if (name === undefined) throw new Error(`build-web: the bundle has no ${what}`);
  return name;
}

function sri(bytes) {
  return `sha384-${createHash("sha384").update(bytes).digest("base64")}`;
}

function compressed(bytes) {
  return {
    gzip: gzipSync(bytes, { level: 9 }),
    brotli: brotliCompressSync(bytes, {
      params: {
        [constants.BROTLI_PARAM_QUALITY]: 11,
        [constants.BROTLI_PARAM_SIZE_HINT]: bytes.length,
      },
    }),
  };
}

function writeWithCompressed(path, bytes) {
  writeFileSync(path, bytes);
  const { gzip, brotli } = compressed(bytes);
  writeFileSync(`${path}.gz`, gzip);
  writeFileSync(`${path}.br`, brotli);
  return { bytes: bytes.length, gzip: gzip.length, brotli: brotli.length };
}

/** Builds the page of the checkout at `root` into `root/dist/web`; returns what build.json holds. */
export async function buildWeb(root) {
  const outdir = join(root, "dist/web");
  rmSync(outdir, { recursive: true, force: true });
  mkdirSync(join(outdir, "assets"), { recursive: true });
  const common = {
    absWorkingDir: root,
    entryNames: "assets/[name]-[hash]",
    outdir,
    bundle: true,
    minify: true,
    format: "esm",
    platform: "browser",
    target: ["es2022"],
    inject: ["src/web/platform/buffer.ts"],
    plugins: [browserPlatform(root)],
    metafile: true,
    legalComments: "none",
    logLevel: "warning",
    write: false,
  };
  // The worker first: the page's script names it (a hash of its content) as a constant.
  const workerBuild = await build({ ...common, entryPoints: { worker: "src/web/worker.ts" } });
  const workerOutputs = outputsOf(workerBuild, outdir);
  const worker = findOutput(workerOutputs, /^assets\/worker-[A-Z0-9]+\.js$/, "worker JS");
  const result = await build({
    ...common,
    entryPoints: { app: "src/web/main.ts", style: "src/web/styles.css" },
    define: {
      RECEIPTD_WORKER_URL: JSON.stringify(`/${worker}`),
      // The page fetches the worker's script at load and checks it against this (fetch's
      // `integrity`), then starts workers from those bytes (src/web/verify-client.ts).
      RECEIPTD_WORKER_SRI: JSON.stringify(sri(workerOutputs[worker])),
    },
  });
  const outputs = { ...outputsOf(result, outdir), ...workerOutputs };
  const js = findOutput(outputs, /^assets\/app-[A-Z0-9]+\.js$/, "app JS");
  const css = findOutput(outputs, /^assets\/style-[A-Z0-9]+\.css$/, "CSS");

  for (const [name, built] of [
    [js, result],
    [worker, workerBuild],
  ]) {
    if (Buffer.from(outputs[name]).includes(STUB_MESSAGE)) {
      throw new Error(`build-web: a path of ${name} reaches node:crypto (see the stub's callers)`);
    }
    const bundled = built.metafile.outputs[relative(root, join(outdir, name))];
    for (const [server, what] of [
      ["src/verifier/crypto/node.ts", "the node:crypto implementation"],
      ["src/verifier/crypto/sodium.ts", "the libsodium implementation"],
      ["/sodium-native/", "sodium-native"],
    ]) {
      if (Object.keys(bundled.inputs).some((input) => input.includes(server))) {
        throw new Error(`build-web: ${name} bundles ${what}`);
      }
    }
  }

  const sizes = {};
  for (const [name, contents] of Object.entries(outputs)) {
    mkdirSync(dirname(join(outdir, name)), { recursive: true });
    sizes[name] = writeWithCompressed(join(outdir, name), contents);
  }
  const template = readFileSync(join(root, "src/web/index.html"), "utf8");
  const html = template
    .replaceAll("%APP_JS%", `/${js}`)
    .replaceAll("%APP_JS_SRI%", sri(outputs[js]))
    .replaceAll("%APP_CSS%", `/${css}`)
    .replaceAll("%APP_CSS_SRI%", sri(outputs[css]));
  if (/%[A-Z_]+%/.test(html)) throw new Error("build-web: index.html has an unknown placeholder");
  sizes["index.html"] = writeWithCompressed(join(outdir, "index.html"), Buffer.from(html));

  const info = {
    assets: [js, css, worker].map((name) => basename(name)),
    sizes,
  };
  writeFileSync(join(outdir, "build.json"), `${JSON.stringify(info, null, 2)}\n`);
  return info;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const root = fileURLToPath(new URL("..", import.meta.url));
  const info = await buildWeb(root);
  for (const [name, size] of Object.entries(info.sizes)) {
    console.log(`dist/web/${name}: ${size.bytes} bytes, ${size.gzip} gzip, ${size.brotli} brotli`);
  }
}
