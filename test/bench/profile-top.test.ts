/** Self time per frame of a .cpuprofile (bench/profile-top.ts), as the docs' before/after tables use it. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { renderTopFrames, selfTimes, topFrames } from "../../bench/profile-top.js";

const frame = (id: number, functionName: string, url = "", lineNumber = 0) => ({
  id,
  callFrame: { functionName, url, lineNumber },
});

/** Samples: idle 10 µs, then `handler` 30 µs, `(garbage collector)` 5 µs, `handler` 20 µs. */
const profile = {
  nodes: [
    frame(1, "(root)"),
    frame(2, "(idle)"),
    frame(3, "handler", "file:///srv/app/dist/src/route.js", 22),
    frame(4, "(garbage collector)"),
    frame(5, "write", "file:///srv/app/node_modules/pino/lib/proto.js", 205),
  ],
  startTime: 0,
  endTime: 100,
  samples: [2, 3, 4, 3, 5],
  // A sample's time is the delta to the next one; the last sample's is unknown.
  timeDeltas: [0, 10, 30, 5, 20],
};

describe("profile-top", () => {
  test("a frame's self time is the sum of its samples' time, labelled by place", () => {
    const times = selfTimes(profile, "/srv/app");
    assert.deepEqual(Object.fromEntries(times), {
      "(idle)": 10,
      "handler dist/src/route.js:23": 50,
      "(garbage collector)": 5,
    });
  });

  test("--skip leaves out the samples of the first microseconds", () => {
    const times = selfTimes(profile, "/srv/app", 35);
    assert.deepEqual(Object.fromEntries(times), {
      "(garbage collector)": 5,
      "handler dist/src/route.js:23": 20,
    });
  });

  test("profiles are summed, sorted by self time and cut at the top N", () => {
    const { frames, totalMicros } = topFrames([profile, profile], 2, "/srv/app");
    assert.equal(totalMicros, 130);
    assert.deepEqual(frames, [
      { frame: "handler dist/src/route.js:23", selfMicros: 100 },
      { frame: "(idle)", selfMicros: 20 },
    ]);
  });

  test("the table gives shares of the busy time, none for idle", () => {
    const table = renderTopFrames(
      [
        { frame: "handler dist/src/route.js:23", selfMicros: 50_000 },
        { frame: "(idle)", selfMicros: 10_000 },
      ],
      65_000,
      10_000,
    );
    assert.equal(
      table,
      [
        "| # | self ms | % of busy | frame |",
        "|---:|---:|---:|---|",
        "| 1 | 50 | 90.9% | `handler dist/src/route.js:23` |",
        "| 2 | 10 | — | `(idle)` |",
      ].join("\n"),
    );
  });
});
