/** `POST /erc8004/validate` (service.md §5) and the validator key behind it (§8), over inject(). */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { rm, stat } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { keccak_256 } from "@noble/hashes/sha3";
import { hashTypedData, recoverTypedDataAddress, verifyTypedData } from "viem";
import { DEFAULT_VALIDATION_REGISTRY } from "../../../../src/erc8004/registry.js";
import { VALIDATOR_KEY_FILE } from "../../../../src/erc8004/validator-key.js";
import { canonicalBytes } from "../../../../src/verifier/json/canonical.js";
import { isObject, type JsonObject } from "../../../../src/verifier/json/value.js";
import {
  recoverSigner,
  type TypedData,
  typedDataDigest,
} from "../../../erc8004/eip712-reference.js";
import { corpusBytes, corpusValue } from "../../../support/corpus.js";
import { startTestService, type TestService, temporaryDataDir } from "../../support/service.js";

type Hex = `0x${string}`;

interface Attestation {
  domain: { name: string; version: string; chainId: number; verifyingContract: Hex };
  types: { ValidationResponse: { name: string; type: string }[] };
  primaryType: "ValidationResponse";
  message: { requestId: Hex; outcome: number; receiptHash: Hex; timestamp: number };
  digest: Hex;
  signature: Hex;
  signer: Hex;
}

interface Validation {
  error?: string;
  detail?: string;
  request_id: string;
  outcome: number;
  outcome_label: string;
  verdict: string;
  checks: Record<string, boolean>;
  binding: string | null;
  verification: { verdict: string; service: string };
  attestation: Attestation | null;
  validator_address: Hex;
  service: string;
}

const REQUEST_ID = `0x${"5a".repeat(32)}`;
const sha256 = (data: Uint8Array | string) => createHash("sha256").update(data).digest("hex");

function bundleOf(file: string): JsonObject {
  const value = corpusValue(`vectors/${file}`);
  assert.ok(isObject(value));
  return value;
}

/** `sha256:` + SHA-256 of the bundle's task_id: the first binding rule. */
function taskIdHash(file: string): string {
  return `sha256:${sha256(bundleOf(file).get("task_id") as string)}`;
}

/** A request body whose bundle is the corpus file's exact bytes. */
function body(file: string, members: Record<string, unknown> = {}): string {
  const fields = { request_id: REQUEST_ID, task_hash: taskIdHash(file), ...members };
  const head = JSON.stringify(fields).slice(1, -1);
  return `{${head},"bundle":${corpusBytes(`vectors/${file}`).toString("utf8")}}`;
}

/** What any EIP-712 library is handed: the envelope exactly as served. */
function typedData(attestation: Attestation) {
  const { domain, types, primaryType, message } = attestation;
  return { domain, types, primaryType, message };
}

describe("POST /erc8004/validate", () => {
  let service: TestService;
  let headers: Record<string, string>;
  const post = (payload: string, extraHeaders: Record<string, string> = headers) =>
    service.app.inject({
      method: "POST",
      url: "/erc8004/validate",
      headers: { "content-type": "application/json", ...extraHeaders },
      payload,
    });
  const validate = async (payload: string) => {
    const response = await post(payload);
    return { statusCode: response.statusCode, json: response.json<Validation>() };
  };

  before(async () => {
    service = await startTestService({}, { anonymous: true });
    const created = await service.app.accessServices.keys.create({ name: "erc8004-tests" });
    headers = { authorization: `Bearer ${created.key}` };
  });
  after(() => service.close());

  describe("a bound, trusted bundle", () => {
    let response: { statusCode: number; json: Validation };
    let infoAddress: string;
    let before_: number;
    let after_: number;
    before(async () => {
      before_ = Math.floor(Date.now() / 1000);
      response = await validate(body("01_happy_minimal.json"));
      after_ = Math.floor(Date.now() / 1000);
      infoAddress = (await service.app.inject({ method: "GET", url: "/info" })).json().erc8004
        .validator_address;
    });

    test("is answered 200 with the contract's members, in order", () => {
      assert.equal(response.statusCode, 200);
      assert.deepEqual(Object.keys(response.json), [
        "request_id",
        "outcome",
        "outcome_label",
        "verdict",
        "checks",
        "binding",
        "verification",
        "attestation",
        "validator_address",
        "service",
      ]);
      const { json } = response;
      assert.equal(json.request_id, REQUEST_ID);
      assert.equal(json.outcome, 1);
      assert.equal(json.outcome_label, "ACCEPT");
      assert.equal(json.verdict, "TRUSTED");
      assert.equal(json.binding, "task_id_sha256");
      assert.deepEqual(json.checks, {
        task_bound: true,
        chain_intact: true,
        signatures_valid: true,
        termination_present: true,
        caps_respected: true,
        agreements_bound: true,
        anchors_present: false,
      });
      assert.equal(json.service, "continuity-receipt-verify");
      assert.equal(json.validator_address, infoAddress);
    });

    test("carries the verdict payload exactly as POST /verify gives it", async () => {
      const verify = await service.app.inject({
        method: "POST",
        url: "/verify",
        headers,
        payload: corpusBytes("vectors/01_happy_minimal.json"),
      });
      assert.equal(verify.statusCode, 200);
      assert.deepEqual(response.json.verification, verify.json());
    });

    test("signs an EIP-712 ValidationResponse for the request, outcome and bundle", () => {
      const attestation = response.json.attestation!;
      assert.deepEqual(attestation.domain, {
        name: "continuity-receipt-verify",
        version: "1",
        chainId: 8453,
        verifyingContract: DEFAULT_VALIDATION_REGISTRY,
      });
      assert.equal(attestation.primaryType, "ValidationResponse");
      const bundleJcs = canonicalBytes(bundleOf("01_happy_minimal.json"));
      assert.deepEqual(
        { ...attestation.message, timestamp: 0 },
        { requestId: REQUEST_ID, outcome: 1, receiptHash: `0x${sha256(bundleJcs)}`, timestamp: 0 },
      );
      assert.ok(
        attestation.message.timestamp >= before_ && attestation.message.timestamp <= after_,
      );
      assert.equal(attestation.signer, response.json.validator_address);
    });

    test("its digest is the EIP-712 hash (viem and an independent implementation agree)", () => {
      const attestation = response.json.attestation!;
      assert.equal(attestation.digest, typedDataDigest(typedData(attestation) as TypedData));
      assert.equal(attestation.digest, hashTypedData(typedData(attestation)));
    });

    test("EIP-712 libraries recover the validator address published at /info", async () => {
      const attestation = response.json.attestation!;
      const signed = { ...typedData(attestation), signature: attestation.signature };
      assert.match(attestation.signature, /^0x[0-9a-f]{130}$/);
      assert.equal(await recoverTypedDataAddress(signed), infoAddress);
      assert.equal(await verifyTypedData({ ...signed, address: infoAddress as Hex }), true);
      assert.equal(recoverSigner(attestation.digest, attestation.signature), infoAddress);
    });

    test("a tampered attestation does not verify", async () => {
      const attestation = response.json.attestation!;
      const tampered = {
        ...typedData(attestation),
        message: { ...attestation.message, outcome: 0 },
        signature: attestation.signature,
      };
      assert.equal(await verifyTypedData({ ...tampered, address: infoAddress as Hex }), false);
      assert.notEqual(
        recoverSigner(typedDataDigest(tampered as TypedData), attestation.signature),
        infoAddress,
      );
    });
  });

  describe("binding rules, each on a corpus bundle", () => {
    const minimal = bundleOf("01_happy_minimal.json");
    const taskId = Buffer.from(minimal.get("task_id") as string, "utf8");
    const receipts = minimal.get("receipts") as JsonObject[];
    const termination = receipts.at(-1)!;
    const cases: [rule: string, file: string, taskHash: string][] = [
      ["task_id_sha256", "01_happy_minimal.json", `0x${sha256(taskId)}`],
      [
        "task_id_keccak256",
        "01_happy_minimal.json",
        `0x${Buffer.from(keccak_256(taskId)).toString("hex")}`,
      ],
      [
        "delivery_response_hash",
        "13_attestation_valid.json",
        "sha256:c4906c63923551d89501bd7d8e9179c854525eef0ae69cc11512c7f07fd534aa",
      ],
      [
        "terminal_receipt_digest",
        "01_happy_minimal.json",
        `sha256:${sha256(canonicalBytes(termination, "sig"))}`,
      ],
    ];
    for (const [rule, file, taskHash] of cases) {
      test(`${rule} binds (${file})`, async () => {
        const { statusCode, json } = await validate(body(file, { task_hash: taskHash }));
        assert.equal(statusCode, 200);
        assert.equal(json.binding, rule);
        assert.equal(json.checks.task_bound, true);
        assert.ok(json.attestation);
      });
    }

    test("an unrelated task_hash is 422 task_hash_unbound with the evaluation, unsigned", async () => {
      const { statusCode, json } = await validate(
        body("01_happy_minimal.json", { task_hash: `0x${"00".repeat(32)}` }),
      );
      assert.equal(statusCode, 422);
      assert.deepEqual(Object.keys(json), [
        "error",
        "request_id",
        "outcome",
        "outcome_label",
        "verdict",
        "checks",
        "binding",
        "verification",
        "attestation",
        "validator_address",
        "service",
      ]);
      assert.equal(json.error, "task_hash_unbound");
      assert.equal(json.verdict, "TRUSTED");
      assert.equal(json.outcome, 1);
      assert.equal(json.binding, null);
      assert.equal(json.checks.task_bound, false);
      assert.equal(json.checks.signatures_valid, true);
      assert.equal(json.verification.verdict, "TRUSTED");
      assert.equal(json.attestation, null);
    });
  });

  describe("outcomes follow the verdict", () => {
    const cases: [file: string, verdict: string, outcome: number, label: string][] = [
      ["02_happy_full.json", "TRUSTED", 1, "ACCEPT"],
      ["03_tampered_body.json", "UNTRUSTED", 0, "REJECT"],
      ["07_redacted_no_disclosure.json", "PROVISIONAL", 2, "NEEDS_EVIDENCE"],
      ["09_erased_content.json", "INSUFFICIENT_EVIDENCE", 2, "NEEDS_EVIDENCE"],
    ];
    for (const [file, verdict, outcome, label] of cases) {
      test(`${verdict} (${file}) → ${outcome} ${label}, signed`, async () => {
        const expected = JSON.parse(corpusBytes(`expected/vectors/${file}`).toString("utf8")) as {
          verdict: string;
        };
        assert.equal(expected.verdict, verdict, "the reference's verdict for this vector");
        const { statusCode, json } = await validate(body(file));
        assert.equal(statusCode, 200);
        assert.equal(json.verdict, verdict);
        assert.equal(json.outcome, outcome);
        assert.equal(json.outcome_label, label);
        const attestation = json.attestation!;
        assert.equal(attestation.message.outcome, outcome);
        const recovered = await recoverTypedDataAddress({
          ...typedData(attestation),
          signature: attestation.signature,
        });
        assert.equal(recovered, json.validator_address);
      });
    }
  });

  describe("registry_address and chain_id", () => {
    test("name the EIP-712 domain; lower- and upper-case addresses are checksummed", async () => {
      for (const written of [
        "0x8004cb1bf31daf7788923b405b754f57aceb4272",
        "0x8004CB1BF31DAF7788923B405B754F57ACEB4272",
        "0x8004Cb1BF31DAf7788923b405b754f57acEB4272",
      ]) {
        const { statusCode, json } = await validate(
          body("01_happy_minimal.json", { registry_address: written, chain_id: 84532 }),
        );
        assert.equal(statusCode, 200, written);
        assert.deepEqual(json.attestation!.domain, {
          name: "continuity-receipt-verify",
          version: "1",
          chainId: 84532,
          verifyingContract: "0x8004Cb1BF31DAf7788923b405b754f57acEB4272",
        });
        const signed = { ...typedData(json.attestation!), signature: json.attestation!.signature };
        assert.equal(await recoverTypedDataAddress(signed), json.validator_address);
      }
    });
  });

  describe("refused requests", () => {
    const good = {
      request_id: REQUEST_ID,
      task_hash: taskIdHash("01_happy_minimal.json"),
      bundle: "BUNDLE",
    };
    /** The good request with some members replaced (undefined removes one). */
    const variant = (changes: Record<string, unknown>) => {
      const members: Record<string, unknown> = { ...good, ...changes };
      for (const [name, value] of Object.entries(changes)) {
        if (value === undefined) delete members[name];
      }
      return JSON.stringify(members).replace(
        '"BUNDLE"',
        corpusBytes("vectors/01_happy_minimal.json").toString("utf8"),
      );
    };
    const cases: [name: string, payload: string, error: string, detail: string][] = [
      ["invalid JSON", "{", "invalid_json", ""],
      ["a duplicate member", `{"request_id":"${REQUEST_ID}","request_id":"x"}`, "invalid_json", ""],
      ["an array body", "[]", "bad_shape", "body must be an object"],
      [
        "an unknown member",
        variant({ chainId: 1 }),
        "bad_shape",
        "body has an unexpected member 'chainId'",
      ],
      [
        "no request_id",
        variant({ request_id: undefined }),
        "missing_request_id",
        "body must have required property 'request_id'",
      ],
      [
        "a request_id of 31 bytes",
        variant({ request_id: `0x${"5a".repeat(31)}` }),
        "bad_request_id",
        'body/request_id must match pattern "^0x[0-9a-fA-F]{64}$"',
      ],
      [
        "a request_id without 0x",
        variant({ request_id: "5a".repeat(32) }),
        "bad_request_id",
        'body/request_id must match pattern "^0x[0-9a-fA-F]{64}$"',
      ],
      [
        "a numeric request_id",
        variant({ request_id: 7 }),
        "bad_request_id",
        "body/request_id must be string",
      ],
      [
        "no task_hash",
        variant({ task_hash: undefined }),
        "missing_task_hash",
        "body must have required property 'task_hash'",
      ],
      [
        "a sha512: task_hash",
        variant({ task_hash: `sha512:${"ab".repeat(32)}` }),
        "bad_task_hash",
        'body/task_hash must match pattern "^(0x|sha256:)[0-9a-fA-F]{64}$"',
      ],
      [
        "no bundle",
        variant({ bundle: undefined }),
        "missing_bundle",
        "body must have required property 'bundle'",
      ],
      [
        "a bundle that is a list",
        variant({ bundle: [] }),
        "bad_bundle",
        "body/bundle must be object",
      ],
      [
        "a registry_address of 19 bytes",
        variant({ registry_address: `0x${"ab".repeat(19)}` }),
        "bad_registry_address",
        'body/registry_address must match pattern "^0x[0-9a-fA-F]{40}$"',
      ],
      [
        "a null registry_address",
        variant({ registry_address: null }),
        "bad_registry_address",
        "body/registry_address must be string",
      ],
      [
        "a registry_address with a wrong EIP-55 checksum",
        // The default registry with one letter's case flipped.
        variant({ registry_address: "0x8004cc8439f36fd5F9F049D9fF86523Df6dAAB58" }),
        "bad_registry_checksum",
        "body/registry_address is mixed-case but not its EIP-55 checksum spelling",
      ],
      ["a chain_id of 0", variant({ chain_id: 0 }), "bad_chain_id", "body/chain_id must be >= 1"],
      [
        "a negative chain_id",
        variant({ chain_id: -1 }),
        "bad_chain_id",
        "body/chain_id must be >= 1",
      ],
      [
        "a chain_id as a string",
        variant({ chain_id: "8453" }),
        "bad_chain_id",
        "body/chain_id must be integer",
      ],
      [
        "a chain_id above the largest wallets accept",
        variant({ chain_id: 4503599627370477 }),
        "bad_chain_id",
        "body/chain_id must be <= 4503599627370476",
      ],
    ];
    for (const [name, payload, error, detail] of cases) {
      test(`${name} → 400 ${error}`, async () => {
        const response = await post(payload);
        assert.equal(response.statusCode, 400);
        const json = response.json<{ error: string; detail: string }>();
        assert.equal(json.error, error);
        if (detail === "") assert.equal(typeof json.detail, "string");
        else assert.deepEqual(json, { error, detail });
      });
    }

    test("a float chain_id (8453.0) and a huge one are not integers in range", async () => {
      const asFloat = variant({ chain_id: "FLOAT" }).replace('"FLOAT"', "8453.0");
      assert.deepEqual((await post(asFloat)).json(), {
        error: "bad_chain_id",
        detail: "body/chain_id must be integer",
      });
      const huge = variant({ chain_id: "HUGE" }).replace('"HUGE"', "1".repeat(40));
      assert.deepEqual((await post(huge)).json(), {
        error: "bad_chain_id",
        detail: "body/chain_id must be <= 4503599627370476",
      });
    });

    test("a bundle without canonical bytes (a float) is 422 bundle_not_canonicalizable", async () => {
      const text = corpusBytes("vectors/01_happy_minimal.json").toString("utf8");
      const withFloat = `{"float_note": 1.5, ${text.slice(text.indexOf("{") + 1)}`;
      const payload = `{"request_id":"${REQUEST_ID}","task_hash":"${taskIdHash("01_happy_minimal.json")}","bundle":${withFloat}}`;
      const response = await post(payload);
      assert.equal(response.statusCode, 422);
      assert.deepEqual(response.json(), {
        error: "bundle_not_canonicalizable",
        detail:
          "the bundle has no canonical (JCS) bytes, so no receiptHash: floats are not allowed in continuity receipts (v0)",
      });
    });

    test("without a credential the request is refused before any work", async () => {
      const response = await post(body("01_happy_minimal.json"), {});
      assert.equal(response.statusCode, 401);
      assert.equal(response.json<{ error: string }>().error, "missing_key");
    });
  });
});

describe("the validator key across restarts", () => {
  test("is created 0600 in DATA_DIR, reused by the next start and published at /info", async () => {
    const dataDir = await temporaryDataDir();
    try {
      const addressOf = async () => {
        const service = await startTestService({ dataDir });
        try {
          const info = (await service.app.inject({ method: "GET", url: "/info" })).json();
          assert.equal(info.erc8004.validator_address, service.app.validatorAddress);
          return info.erc8004 as Record<string, unknown>;
        } finally {
          await service.app.close();
        }
      };
      const first = await addressOf();
      assert.equal((await stat(join(dataDir, VALIDATOR_KEY_FILE))).mode & 0o777, 0o600);
      const second = await addressOf();
      assert.equal(second.validator_address, first.validator_address);
      assert.deepEqual(first, {
        endpoint: "POST /erc8004/validate",
        chain_id_default: 8453,
        registry_default: "0x8004Cc8439f36fd5F9F049D9fF86523Df6dAAB58",
        outcomes: [
          { outcome: 0, label: "REJECT", verdicts: ["UNTRUSTED"] },
          { outcome: 1, label: "ACCEPT", verdicts: ["TRUSTED"] },
          {
            outcome: 2,
            label: "NEEDS_EVIDENCE",
            verdicts: ["PROVISIONAL", "INSUFFICIENT_EVIDENCE"],
          },
        ],
        validator_address: first.validator_address,
      });
      assert.match(String(first.validator_address), /^0x[0-9a-fA-F]{40}$/);
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
