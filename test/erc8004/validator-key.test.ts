/** The secp256k1 validator key (service.md §8): created once with mode 0600, then reused. */
import assert from "node:assert/strict";
import { mkdir, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { recoverMessageAddress } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import {
  loadOrCreateValidatorKey,
  openValidatorKey,
  VALIDATOR_KEY_FILE,
  ValidatorKeyError,
} from "../../src/erc8004/validator-key.js";
import { temporaryDataDir } from "../service/support/service.js";
import { toChecksumAddress } from "./eip712-reference.js";

describe("the validator key", () => {
  let root: string;
  before(async () => {
    root = await temporaryDataDir();
  });
  after(() => rm(root, { recursive: true, force: true }));

  test("is created 0600 on first use (with the data directory) and reused after", async () => {
    const dataDir = join(root, "fresh", "data");
    const first = await loadOrCreateValidatorKey(dataDir);
    const path = join(dataDir, VALIDATOR_KEY_FILE);
    assert.equal((await stat(path)).mode & 0o777, 0o600);
    const text = await readFile(path, "utf8");
    assert.match(text, /^0x[0-9a-f]{64}\n$/);
    assert.equal(privateKeyToAccount(text.trim() as `0x${string}`).address, first.address);
    assert.equal(first.address, toChecksumAddress(first.address), "the address is EIP-55");

    const second = await loadOrCreateValidatorKey(dataDir);
    assert.equal(second.address, first.address);
    assert.equal(openValidatorKey(dataDir).address, first.address);
    assert.equal(await readFile(path, "utf8"), text);
    assert.deepEqual(await readdir(dataDir), [VALIDATOR_KEY_FILE], "no temporary file is left");
  });

  test("concurrent first starts agree on one key", async () => {
    const dataDir = join(root, "race");
    const accounts = await Promise.all(
      Array.from({ length: 8 }, () => loadOrCreateValidatorKey(dataDir)),
    );
    assert.equal(new Set(accounts.map((account) => account.address)).size, 1);
    assert.deepEqual(await readdir(dataDir), [VALIDATOR_KEY_FILE]);
  });

  test("an operator-supplied key is used as it is", async () => {
    const dataDir = join(root, "supplied");
    await mkdir(dataDir);
    const key = `0x${"11".repeat(32)}`;
    await writeFile(join(dataDir, VALIDATOR_KEY_FILE), key, { mode: 0o600 });
    const account = await loadOrCreateValidatorKey(dataDir);
    assert.equal(account.address, privateKeyToAccount(key as `0x${string}`).address);
  });

  test("signs with the key whose address it published, making the account once", async () => {
    const dataDir = join(root, "signer");
    const key = await loadOrCreateValidatorKey(dataDir);
    const account = await key.signer();
    assert.equal(account.address, key.address);
    assert.equal(await key.signer(), account, "one account per loaded key");
    const signature = await account.signMessage({ message: "validator" });
    assert.equal(await recoverMessageAddress({ message: "validator", signature }), key.address);
  });

  const NOT_TEXT = "does not hold 0x + 64 lowercase hex digits";
  const NOT_KEY = "is not a valid secp256k1 private key";
  const corrupt: [name: string, text: string, message: string][] = [
    ["not hex", "not a key\n", NOT_TEXT],
    ["upper-case hex", `0x${"AB".repeat(32)}\n`, NOT_TEXT],
    ["too short", `0x${"ab".repeat(31)}\n`, NOT_TEXT],
    ["zero, outside the curve's scalar range", `0x${"00".repeat(32)}\n`, NOT_KEY],
    ["the group order or above", `0x${"ff".repeat(32)}\n`, NOT_KEY],
  ];
  for (const [name, text, message] of corrupt) {
    test(`a key file that is ${name} is refused, not replaced`, async () => {
      const dataDir = join(root, `corrupt-${name.replace(/\W+/g, "-")}`);
      await mkdir(dataDir);
      const path = join(dataDir, VALIDATOR_KEY_FILE);
      await writeFile(path, text, { mode: 0o600 });
      const refusal = new ValidatorKeyError(`${path} ${message}`);
      await assert.rejects(loadOrCreateValidatorKey(dataDir), refusal);
      assert.throws(() => openValidatorKey(dataDir), refusal);
      assert.equal(await readFile(path, "utf8"), text);
    });
  }
});
