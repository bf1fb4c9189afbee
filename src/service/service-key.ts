/**
 * The service's Ed25519 signing key (service.md §8): created in the data directory on first
 * start, readable by the owner only, and reused on every later start so that receipts signed
 * before a restart keep naming a live issuer.
 */
import { createPrivateKey, generateKeyPairSync, randomBytes } from "node:crypto";
import { link, mkdir, open, readFile, unlink } from "node:fs/promises";
import { dirname, join } from "node:path";
import { type Ed25519Signer, signerFromPrivateKey } from "../verifier/crypto/ed25519.js";

export const SERVICE_KEY_FILE = "service-key.pem";

export class ServiceKeyError extends Error {
  override readonly name = "ServiceKeyError";
}

function signerFromPem(pem: string, path: string): Ed25519Signer {
  let key: ReturnType<typeof createPrivateKey>;
  try {
    key = createPrivateKey(pem);
  } catch (error) {
    throw new ServiceKeyError(`${path} is not a PEM private key: ${(error as Error).message}`);
  }
  if (key.asymmetricKeyType !== "ed25519") {
    throw new ServiceKeyError(`${path} holds a ${key.asymmetricKeyType} key, not Ed25519`);
  }
  return signerFromPrivateKey(key);
}

async function readIfPresent(path: string): Promise<string | null> {
  try {
    return await readFile(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw error;
  }
}

/**
 * Writes `data` to `path` only if no file is there, and all at once: readers see either no
 * file or the complete, fsynced one. The final step is a hard link rather than a rename
 * because a rename would silently replace a key that another process (the web and the
 * worker start together) created a moment earlier. Returns false when that happened.
 */
async function createFileOnce(path: string, data: string, mode: number): Promise<boolean> {
  const temporary = `${path}.${randomBytes(6).toString("hex")}.tmp`;
  const handle = await open(temporary, "wx", mode);
  try {
    await handle.chmod(mode);
    await handle.writeFile(data);
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await link(temporary, path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw error;
  } finally {
    await unlink(temporary);
  }
  const directory = await open(dirname(path), "r");
  try {
    await directory.sync();
  } finally {
    await directory.close();
  }
  return true;
}

/** Loads `<dataDir>/service-key.pem`, creating it (mode 0600) when it does not exist yet. */
export async function loadOrCreateServiceKey(dataDir: string): Promise<Ed25519Signer> {
  const path = join(dataDir, SERVICE_KEY_FILE);
  const existing = await readIfPresent(path);
  if (existing !== null) return signerFromPem(existing, path);

  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const { privateKey } = generateKeyPairSync("ed25519");
  const pem = privateKey.export({ format: "pem", type: "pkcs8" }).toString();
  if (await createFileOnce(path, pem, 0o600)) return signerFromPrivateKey(privateKey);
  return signerFromPem(await readFile(path, "utf8"), path);
}
