/**
 * The bench's floor server (bench/floor-server.ts): over a real socket it answers
 * `POST /verify` with exactly the service's own answer, also when many requests share one
 * message to a worker, and nothing else.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, describe, test } from "node:test";
import { generatedBundle } from "../../bench/fixtures.js";
import { type RunningFloor, startFloorProcess } from "../../bench/service-process.js";
import { DEFAULT_LIMITS } from "../../src/service/config.js";
import { answerVerifyRequest } from "../../src/service/verification/answer.js";
import { generateSigner } from "../../src/verifier/crypto/ed25519.js";

const CORPUS = new URL("../../../shared/corpus/", import.meta.url);

const bundleText = (variant: number) => Buffer.from(generatedBundle(6, variant)).toString("utf8");

function serviceAnswer(body: string) {
  const signer = generateSigner();
  const outcome = answerVerifyRequest(
    new TextEncoder().encode(body),
    { requireAnchor: false, receipt: false },
    { ...DEFAULT_LIMITS, signer: () => signer },
  );
  assert.ok("json" in outcome);
  return { status: outcome.statusCode, json: outcome.json };
}

describe("bench floor server", () => {
  let floor: RunningFloor;

  before(async () => {
    floor = await startFloorProcess(2);
  });
  after(async () => {
    await floor.stop();
  });

  async function post(body: string) {
    const response = await fetch(`${floor.origin}/verify`, { method: "POST", body });
    return { status: response.status, json: await response.text() };
  }

  test("a corpus bundle, a batch and a refusal get the service's own answers", async () => {
    const tampered = readFileSync(new URL("vectors/03_tampered_body.json", CORPUS), "utf8");
    const batch = `{"bundles":[${bundleText(1)},${tampered}]}`;
    const answers = [];
    for (const body of [tampered, bundleText(0), batch, "[1,2", "[1,2]"]) {
      const answer = await post(body);
      assert.deepEqual(answer, serviceAnswer(body));
      answers.push(answer);
    }
    assert.deepEqual(
      answers.map(({ status, json }) => `${status} ${/"(verdict|error)":"(\w+)"/.exec(json)?.[2]}`),
      ["200 UNTRUSTED", "200 TRUSTED", "200 TRUSTED", "400 invalid_json", "400 bad_shape"],
    );
  });

  test("48 requests at once, several to a message, each get their own answer", async () => {
    const bodies = Array.from({ length: 48 }, (_, i) =>
      i % 3 === 2 ? `{"not":"a bundle ${i}"}` : bundleText(i),
    );
    const answers = await Promise.all(bodies.map(post));
    for (const [i, answer] of answers.entries()) {
      assert.deepEqual(answer, serviceAnswer(bodies[i]!));
    }
  });

  test("GET /health is 200; anything else is 404", async () => {
    assert.equal((await fetch(`${floor.origin}/health`)).status, 200);
    const other = await fetch(`${floor.origin}/verify?receipt=1`, { method: "POST", body: "{}" });
    assert.equal(other.status, 404);
    assert.equal(await other.text(), '{"error":"not_found"}');
  });
});
