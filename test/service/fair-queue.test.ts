/**
 * The fair queue's order (issue 32), with a clock the test moves: which principal a free
 * thread serves next, how many threads one principal may hold, who is refused or pushed out
 * when the queue is full, and how a task's real thread time (a deadline-cut one's above all)
 * moves its principal back.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  FairQueue,
  type FairQueueEntry,
  type FairQueueMessage,
  type FairQueueOptions,
} from "../../src/service/fair-queue.js";

/** A queue of labelled tasks and a clock in milliseconds that only the test moves. */
function fairQueue(options: Partial<FairQueueOptions> = {}) {
  const clock = { now: 0 };
  const queue = new FairQueue<string>({
    threads: 2,
    maxQueue: 100,
    maxQueuePerPrincipal: 100,
    maxMessageItems: 16,
    now: () => clock.now,
    ...options,
  });
  const admit = (principal: string, label: string, cost = 1, group: string | null = null) => {
    const admission = queue.admit(principal, label, cost, group);
    assert.ok("entry" in admission, `${label} admitted`);
    return admission;
  };
  const next = (): FairQueueMessage<string> => {
    const message = queue.nextMessage();
    assert.ok(message !== null, "a message is sent");
    return message;
  };
  const labels = (message: FairQueueMessage<string>) => message.entries.map((e) => e.item);
  return { queue, clock, admit, next, labels };
}

describe("FairQueue", () => {
  test("a principal alone gets every thread", () => {
    const { queue, admit, next, labels } = fairQueue({ threads: 3 });
    for (let i = 0; i < 5; i++) admit("key:flood", `f${i}`);
    assert.deepEqual([next(), next(), next()].map(labels), [["f0"], ["f1"], ["f2"]]);
    assert.equal(queue.nextMessage(), null, "no thread is free");
    assert.equal(queue.queued, 2);
    assert.equal(queue.principalsWaiting, 1);
  });

  test("another principal's task goes to the next thread that frees, not behind the queue", () => {
    const { queue, clock, admit, next, labels } = fairQueue();
    for (let i = 0; i < 10; i++) admit("key:flood", `f${i}`);
    const running = [next(), next()];
    admit("key:honest", "h0");
    assert.equal(queue.principalsWaiting, 2);
    clock.now += 200;
    queue.finished(running[0]!, true);
    assert.deepEqual(labels(next()), ["h0"]);
  });

  test("while another principal waits, one holds at most threads − 1", () => {
    const { queue, clock, admit, next, labels } = fairQueue({ threads: 3 });
    for (let i = 0; i < 10; i++) admit("key:flood", `f${i}`);
    const flood = [next(), next(), next()];
    admit("key:honest", "h0");
    admit("key:honest", "h1");
    clock.now += 10;
    queue.finished(flood[0]!, true);
    assert.deepEqual(labels(next()), ["h0"]);
    // The flooder is down to two threads: threads − 1, so it may take the next.
    queue.finished(flood[1]!, true);
    const following = next();
    assert.deepEqual(labels(following), ["h1"]);
    assert.equal(queue.nextMessage(), null);
    // The honest queue is empty: the flooder alone again takes what frees.
    queue.finished(following, true);
    assert.deepEqual(labels(next()), ["f3"]);
  });

  test("a principal's long tasks leave a thread free while another principal is about", () => {
    const { queue, clock, admit, next, labels } = fairQueue({
      longTaskCost: 16,
      longTaskReserveMs: 1_000,
    });
    admit("key:honest", "h0");
    const honest = next();
    clock.now += 3;
    queue.finished(honest, true);
    for (let i = 0; i < 4; i++) admit("key:flood", `f${i}`, 64);
    assert.deepEqual(labels(next()), ["f0"]);
    // The other thread is free, but the honest key sent a task 3 ms ago: it stays free.
    assert.equal(queue.nextMessage(), null);
    assert.equal(queue.queued, 3);
    admit("key:honest", "h1");
    assert.deepEqual(labels(next()), ["h1"]);
  });

  test("a principal's short tasks still take every thread beside its long one", () => {
    const { queue, clock, admit, next, labels } = fairQueue({
      threads: 3,
      longTaskCost: 16,
      longTaskReserveMs: 1_000,
    });
    admit("key:honest", "h0");
    const honest = next();
    clock.now += 3;
    queue.finished(honest, true);
    admit("key:flood", "long", 64);
    admit("key:flood", "s0");
    admit("key:flood", "s1");
    assert.deepEqual([next(), next(), next()].map(labels), [["long"], ["s0"], ["s1"]]);
  });

  test("a principal alone, or once the others are quiet for the reserve, gets every thread", () => {
    const { queue, clock, admit, next, labels } = fairQueue({
      longTaskCost: 16,
      longTaskReserveMs: 1_000,
    });
    for (let i = 0; i < 6; i++) admit("key:flood", `f${i}`, 64);
    const alone = [next(), next()];
    assert.deepEqual(alone.map(labels), [["f0"], ["f1"]]);
    admit("key:honest", "h0");
    clock.now += 300;
    queue.finished(alone[0]!, true);
    const honest = next();
    assert.deepEqual(labels(honest), ["h0"]);
    queue.finished(alone[1]!, true);
    const flood = next();
    assert.deepEqual(labels(flood), ["f2"]);
    // The flood keeps one thread; the one the honest task frees is left to it for a while.
    clock.now += 3;
    queue.finished(honest, true);
    assert.equal(queue.nextMessage(), null);
    // The honest key has sent nothing for longer than the reserve: the next thread to free
    // lifts it, and the flood takes both again.
    clock.now += 1_001;
    queue.finished(flood, true);
    assert.deepEqual([next(), next()].map(labels), [["f3"], ["f4"]]);
  });

  test("a batch of small tasks is long too: one principal's batches leave a thread free", () => {
    const { queue, clock, admit, next } = fairQueue({
      longTaskCost: 16,
      longTaskReserveMs: 1_000,
    });
    admit("key:honest", "h0");
    const honest = next();
    clock.now += 3;
    queue.finished(honest, true);
    for (let i = 0; i < 40; i++) admit("key:flood", `f${i}`, 1, "verify");
    assert.equal(next().entries.length, 16);
    // A second message of the flood's stops short of long.
    assert.equal(next().entries.length, 15);
    assert.equal(queue.queued, 9);
  });

  test("principals with equal work are served in turn", () => {
    const { queue, clock, admit, next, labels } = fairQueue({ threads: 1 });
    for (const principal of ["a", "b", "c"]) {
      for (let i = 0; i < 3; i++) admit(`key:${principal}`, `${principal}${i}`);
    }
    const order: string[] = [];
    for (let i = 0; i < 9; i++) {
      const message = next();
      order.push(...labels(message));
      clock.now += 5;
      queue.finished(message, true);
    }
    assert.deepEqual(order, ["a0", "b0", "c0", "a1", "b1", "c1", "a2", "b2", "c2"]);
  });

  test("a principal is charged the thread time its task really took: a deadline cut included", () => {
    const { queue, clock, admit, next, labels } = fairQueue({ threads: 1 });
    admit("key:flood", "cut");
    const cut = next();
    for (let i = 0; i < 3; i++) admit("key:flood", `f${i}`);
    for (let i = 0; i < 5; i++) admit("key:honest", `h${i}`);
    assert.equal(queue.ranMs(cut.entries[0]!), 0);
    clock.now += 15_000;
    assert.equal(queue.ranMs(cut.entries[0]!), 15_000);
    queue.finished(cut, false);
    const order: string[] = [];
    for (let i = 0; i < 8; i++) {
      const message = next();
      order.push(...labels(message));
      clock.now += 200;
      queue.finished(message, true);
    }
    // 15 s of debt: every honest task (1 s in all) goes before the flooder's next one.
    assert.deepEqual(order, ["h0", "h1", "h2", "h3", "h4", "f0", "f1", "f2"]);
  });

  test("a cost weight orders tasks before their real time is known", () => {
    const { queue, clock, admit, next, labels } = fairQueue({ threads: 8 });
    admit("key:warm", "w");
    const warm = next();
    clock.now += 10;
    queue.finished(warm, true);
    admit("key:heavy", "heavy0", 50);
    admit("key:heavy", "heavy1", 50);
    admit("key:light", "light0");
    admit("key:light", "light1");
    admit("key:light", "light2");
    // Each is sent before the previous one ends: only the estimates decide.
    const order = [next(), next(), next(), next(), next()].flatMap(labels);
    assert.deepEqual(order, ["heavy0", "light0", "light1", "light2", "heavy1"]);
  });

  test("an idle principal comes back level, with no saved-up turns", () => {
    const { queue, clock, admit, next, labels } = fairQueue({ threads: 1 });
    for (let i = 0; i < 6; i++) admit("key:busy", `b${i}`);
    const order: string[] = [];
    for (let i = 0; i < 3; i++) {
      const message = next();
      order.push(...labels(message));
      clock.now += 10;
      queue.finished(message, true);
    }
    admit("key:late", "l0");
    admit("key:late", "l1");
    for (let i = 0; i < 5; i++) {
      const message = next();
      order.push(...labels(message));
      clock.now += 10;
      queue.finished(message, true);
    }
    assert.deepEqual(order, ["b0", "b1", "b2", "l0", "b3", "l1", "b4", "b5"]);
  });

  test("a principal's own queue bound refuses it, not the others", () => {
    const { queue, admit, next } = fairQueue({ threads: 1, maxQueuePerPrincipal: 2 });
    admit("key:flood", "running");
    next();
    admit("key:flood", "f0");
    admit("key:flood", "f1");
    assert.deepEqual(queue.admit("key:flood", "f2", 1, null), {
      refused: "principal_queue_full",
    });
    admit("key:honest", "h0");
    assert.equal(queue.queued, 3);
  });

  test("a full queue pushes out the newest task of the longest, for a principal with fewer", () => {
    const { queue, admit, next } = fairQueue({ threads: 1, maxQueue: 4 });
    admit("key:flood", "running");
    next();
    for (let i = 0; i < 4; i++) admit("key:flood", `f${i}`);
    const honest = admit("key:honest", "h0");
    assert.equal(honest.pushedOut?.item, "f3");
    assert.equal(queue.queued, 4);
    // The longest queue's own next task finds no one to push out but itself.
    assert.deepEqual(queue.admit("key:flood", "f4", 1, null), { refused: "queue_full" });
    assert.equal(queue.queued, 4);
  });

  test("a task that a free thread takes at once is admitted whatever the bounds", () => {
    const { queue, admit, next, labels } = fairQueue({
      threads: 1,
      maxQueue: 0,
      maxQueuePerPrincipal: 0,
    });
    admit("key:a", "a0");
    assert.deepEqual(labels(next()), ["a0"]);
    assert.deepEqual(queue.admit("key:a", "a1", 1, null), { refused: "principal_queue_full" });
  });

  test("small tasks of one kind share a message, taken in the same fair order", () => {
    const { queue, clock, admit, next, labels } = fairQueue({ threads: 1 });
    admit("key:a", "busy");
    const busy = next();
    for (let i = 0; i < 4; i++) admit("key:a", `a${i}`, 1, "verify");
    admit("key:b", "b0", 1, "verify");
    admit("key:c", "alone");
    admit("key:b", "b1", 1, "verify");
    clock.now += 10;
    queue.finished(busy, true);
    const batch = next();
    // a has used 10 ms of thread time, b none: b's go first. c's task cannot travel with them.
    assert.deepEqual(labels(batch), ["b0", "b1", "a0", "a1", "a2", "a3"]);
    clock.now += 10;
    queue.finished(batch, true);
    assert.deepEqual(labels(next()), ["alone"]);
  });

  test("a task withdrawn while it waits is never sent, and a principal with nothing left leaves", () => {
    const { queue, admit, next, labels } = fairQueue({ threads: 1 });
    admit("key:a", "a0");
    const running = next();
    const waiting = admit("key:b", "b0");
    assert.equal(queue.withdraw(waiting.entry as FairQueueEntry<string>), true);
    assert.equal(queue.withdraw(waiting.entry as FairQueueEntry<string>), false);
    assert.equal(queue.principalsWaiting, 0);
    assert.equal(queue.queued, 0);
    queue.finished(running, true);
    assert.equal(queue.nextMessage(), null);
    admit("key:c", "c0");
    assert.deepEqual(labels(next()), ["c0"]);
  });
});
