/**
 * The shape of a conformance submission (service.md §10, verifier.md §9.3): what
 * `tools/conformance_submit.py` writes. One JSON Schema, used both to validate the strictly
 * parsed body (in the worker) and to describe `POST /conformance` in the OpenAPI document.
 *
 * The schema fixes the envelope only. What an entry says (a verdict, codes, validity) is
 * graded, not validated: a verifier that answered a vector wrongly, even with a value of the
 * wrong type, gets a mismatch for that vector rather than a refused submission.
 */

const text = (description: string, maxLength: number) =>
  ({ type: "string", maxLength, description }) as const;

/** `{<id>: <entry>}`; entries must be objects, and their members are graded. */
const answers = (description: string, entry: Record<string, { description: string }>) =>
  ({
    type: "object",
    description,
    additionalProperties: { type: "object", properties: entry },
  }) as const;

export const submissionSchema = {
  type: "object",
  description:
    "a conformance submission: what the implementation's verifier said about each vector of " +
    "the pinned corpus (verifier.md §9.3)",
  required: ["implementation", "results"],
  additionalProperties: false,
  properties: {
    implementation: {
      type: "object",
      description: "the implementation graded; echoed in the signed report",
      required: ["name"],
      additionalProperties: false,
      properties: {
        name: { ...text("its name", 200), minLength: 1 },
        version: text("its version", 200),
        language: text("its programming language", 200),
        url: text("where it can be found", 2000),
      },
    },
    results: {
      type: "object",
      description:
        "one member per corpus section; an omitted section is graded as unanswered, and " +
        "hostile_inputs is required while the hostile-input corpus is deployed",
      additionalProperties: false,
      properties: {
        bundles: answers("by manifest file name (vectors/manifest.json)", {
          verdict: { description: "the verdict the verifier gave" },
          codes: { description: "the error codes it gave, sorted" },
        }),
        verification_receipts: answers(
          "by manifest file name (vectors/verification/manifest.json)",
          {
            valid: { description: "whether the receipt verified" },
            errors: { description: "the error codes, sorted" },
          },
        ),
        hostile_inputs: answers("by case label (hostile/manifest.json)", {
          structured: { description: "whether the verifier answered with a structured result" },
          verdict: { description: "the verdict it gave" },
          codes: { description: "the error codes it gave, sorted" },
        }),
      },
    },
  },
} as const;
