/**
 * The order in which the CPU pool's threads serve principals (issue 32): one queue per
 * principal, served by start-time fair queuing on thread time, so that a principal with a
 * long queue of heavy tasks delays another principal's next task by about one task, not by
 * its whole queue. docs/service-decisions.md ("A fair CPU pool") gives the reasoning.
 *
 * - **Thread time is the currency.** Each principal has a virtual finish time `finish`, in
 *   thread-milliseconds. A task is charged an estimate when it is sent (its `cost` weight
 *   times the mean thread time one unit of cost has taken) and, when its message ends, the
 *   time it really held a thread instead. A task cut at the deadline has held its thread
 *   until then: its principal pays for all of it, and waits while the others catch up.
 * - **Served in turn.** The next message goes to the principal whose next start,
 *   `max(finish, virtual)`, is smallest; `virtual` is the largest start given so far, so a
 *   principal that was idle comes back level with the others, with no saved-up credit, while
 *   one in debt stays in debt. Ties go round-robin.
 * - **In flight: at most threads − 1 while another principal waits.** A principal alone gets
 *   every thread (the pool stays work-conserving); once another waits, the busy one is sent
 *   nothing more until it is down to threads − 1, so the next thread to finish goes to the
 *   other. Nothing is preempted: the newcomer waits for one task to finish, at most.
 * - **Queue shares.** A principal may hold at most `maxQueuePerPrincipal` waiting tasks. When
 *   the whole queue (`maxQueue`) is full, a newcomer with a shorter queue pushes out the
 *   newest task of the longest one (refused `pool_overloaded`), so one principal filling the
 *   queue never turns others away.
 */

/** One task in the queue, and the thread time it has been charged. */
export interface FairQueueEntry<Item> {
  readonly item: Item;
  /** The scheduling weight (≥ 1). */
  readonly cost: number;
  /** Tasks with the same group may share a message; null: always alone. */
  readonly group: string | null;
  /** When its message was handed to a thread; null while it waits. */
  readonly startedAt: number | null;
}

/** The tasks of one message to a thread. */
export interface FairQueueMessage<Item> {
  readonly entries: readonly FairQueueEntry<Item>[];
  readonly startedAt: number;
}

export type FairQueueAdmission<Item> =
  | { entry: FairQueueEntry<Item>; pushedOut: FairQueueEntry<Item> | null }
  | { refused: "queue_full" | "principal_queue_full" };

export interface FairQueueOptions {
  threads: number;
  /** Tasks allowed to wait, all principals together. */
  maxQueue: number;
  /** Tasks one principal may have waiting. */
  maxQueuePerPrincipal: number;
  /** The most tasks one message carries. */
  maxMessageItems: number;
  /** Milliseconds, monotonic (tests pass their own). */
  now?: () => number;
}

/** What the queue knows of one principal. */
interface Share<Item> {
  readonly principal: string;
  readonly waiting: Entry<Item>[];
  /** Messages holding its tasks on a thread. */
  running: number;
  /** Virtual finish time, in thread-milliseconds. */
  finish: number;
}

interface Entry<Item> extends FairQueueEntry<Item> {
  readonly share: Share<Item>;
  startedAt: number | null;
  /** Thread time charged when it was sent, replaced by the real time when its message ends. */
  estimatedMs: number;
}

/**
 * Principals remembered while they have nothing queued or running, only for the thread time
 * they still owe: beyond this many, the oldest debts are forgiven, so the map stays bounded
 * whatever the number of addresses calling.
 */
const REMEMBERED_DEBTORS = 10_000;
/** The weight of one finished message in the mean thread time per unit of cost. */
const MEAN_WEIGHT = 0.1;

export class FairQueue<Item> {
  readonly #options: Required<FairQueueOptions>;
  readonly #shares = new Map<string, Share<Item>>();
  /** Principals with waiting tasks, in the order ties are served. */
  readonly #backlogged = new Set<Share<Item>>();
  /** Waiting tasks per message group. */
  readonly #groupWaiting = new Map<string, number>();
  #queued = 0;
  #running = 0;
  #virtual = 0;
  #msPerCost = 1;

  constructor(options: FairQueueOptions) {
    this.#options = { now: () => performance.now(), ...options };
  }

  /** Tasks waiting for a thread. */
  get queued(): number {
    return this.#queued;
  }

  /** Principals with at least one task waiting. */
  get principalsWaiting(): number {
    return this.#backlogged.size;
  }

  /** Messages on threads. */
  get running(): number {
    return this.#running;
  }

  /**
   * Queues `item` for `principal`, or refuses it. A task that a free thread will take at once
   * is always admitted; otherwise the principal's own bound applies, then the global one.
   */
  admit(
    principal: string,
    item: Item,
    cost: number,
    group: string | null,
  ): FairQueueAdmission<Item> {
    const share = this.#shareOf(principal);
    let pushedOut: Entry<Item> | null = null;
    const runsAtOnce = this.#running < this.#options.threads && this.#queued === 0;
    if (!runsAtOnce) {
      if (share.waiting.length >= this.#options.maxQueuePerPrincipal) {
        this.#forgetIfIdle(share);
        return { refused: "principal_queue_full" };
      }
      if (this.#queued >= this.#options.maxQueue) {
        const longest = this.#longestQueue();
        if (longest === null || longest.waiting.length <= share.waiting.length + 1) {
          this.#forgetIfIdle(share);
          return { refused: "queue_full" };
        }
        pushedOut = longest.waiting.at(-1) ?? null;
        if (pushedOut !== null) this.withdraw(pushedOut);
      }
    }
    const entry: Entry<Item> = { item, cost, group, share, startedAt: null, estimatedMs: 0 };
    share.waiting.push(entry);
    this.#backlogged.add(share);
    this.#queued++;
    if (group !== null) this.#groupWaiting.set(group, (this.#groupWaiting.get(group) ?? 0) + 1);
    return { entry, pushedOut };
  }

  /** Takes a waiting task out of the queue (its caller gave up); false if it was not waiting. */
  withdraw(entry: FairQueueEntry<Item>): boolean {
    const { share } = entry as Entry<Item>;
    const at = share.waiting.indexOf(entry as Entry<Item>);
    if (at < 0) return false;
    share.waiting.splice(at, 1);
    this.#unqueued(entry);
    if (share.waiting.length === 0) this.#backlogged.delete(share);
    this.#forgetIfIdle(share);
    return true;
  }

  /**
   * The next message for a free thread, or null (no thread free, or nothing waiting). A task
   * that may share its message is sent with others of its group, taken in the same fair
   * order: as many as spread the group's waiting tasks over the free threads, up to
   * `maxMessageItems`.
   */
  nextMessage(): FairQueueMessage<Item> | null {
    const freeThreads = this.#options.threads - this.#running;
    if (freeThreads <= 0) return null;
    const first = this.#nextShare(null, null);
    if (first === null) return null;
    const startedAt = this.#options.now();
    const head = this.#send(first, startedAt);
    const entries = [head];
    const inMessage = new Set([first]);
    if (head.group !== null) {
      const groupWaiting = (this.#groupWaiting.get(head.group) ?? 0) + 1;
      const size = Math.min(this.#options.maxMessageItems, Math.ceil(groupWaiting / freeThreads));
      while (entries.length < size) {
        const share = this.#nextShare(head.group, inMessage);
        if (share === null) break;
        entries.push(this.#send(share, startedAt));
        inMessage.add(share);
      }
    }
    for (const share of inMessage) share.running++;
    this.#running++;
    return { entries, startedAt };
  }

  /**
   * A message has ended (answered, failed or abandoned): its thread is free, and each of its
   * principals is charged the thread time it really took, shared by cost, in place of the
   * estimate. `representative`: false for a message cut short (deadline, client gone), whose
   * time says nothing about what a unit of cost usually takes.
   */
  finished(message: FairQueueMessage<Item>, representative: boolean): void {
    const ranMs = Math.max(0, this.#options.now() - message.startedAt);
    const entries = message.entries as readonly Entry<Item>[];
    const totalCost = entries.reduce((sum, entry) => sum + entry.cost, 0);
    const shares = new Set<Share<Item>>();
    for (const entry of entries) {
      entry.share.finish += (ranMs * entry.cost) / totalCost - entry.estimatedMs;
      shares.add(entry.share);
    }
    for (const share of shares) {
      share.running--;
      this.#forgetIfIdle(share);
    }
    this.#running--;
    if (representative && totalCost > 0) {
      this.#msPerCost += MEAN_WEIGHT * (ranMs / totalCost - this.#msPerCost);
    }
  }

  /** How long `entry` has held a thread so far: 0 while it waits. */
  ranMs(entry: FairQueueEntry<Item>): number {
    return entry.startedAt === null ? 0 : Math.max(0, this.#options.now() - entry.startedAt);
  }

  /**
   * The principal to serve next: the smallest next start among those that may take a thread.
   * With `group`, only principals whose next task is of that group, and (`inMessage`) those
   * already in the message may add to it whatever they hold.
   */
  #nextShare(group: string | null, inMessage: Set<Share<Item>> | null): Share<Item> | null {
    // With one thread, one task in flight is all anyone can hold.
    const cap = Math.max(1, this.#options.threads - 1);
    const othersWaiting = this.#backlogged.size > 1;
    let best: Share<Item> | null = null;
    let bestStart = Number.POSITIVE_INFINITY;
    for (const share of this.#backlogged) {
      const next = share.waiting[0];
      if (next === undefined || (group !== null && next.group !== group)) continue;
      const mayTakeThread = inMessage?.has(share) === true || share.running < cap || !othersWaiting;
      if (!mayTakeThread) continue;
      const start = Math.max(share.finish, this.#virtual);
      if (start < bestStart) {
        best = share;
        bestStart = start;
      }
    }
    return best;
  }

  /** Takes `share`'s next task off the queue and charges its estimate. */
  #send(share: Share<Item>, startedAt: number): Entry<Item> {
    const entry = share.waiting.shift() as Entry<Item>;
    this.#unqueued(entry);
    const start = Math.max(share.finish, this.#virtual);
    this.#virtual = start;
    entry.estimatedMs = entry.cost * this.#msPerCost;
    entry.startedAt = startedAt;
    share.finish = start + entry.estimatedMs;
    // Last among equals: principals level with it are served before it again.
    this.#backlogged.delete(share);
    if (share.waiting.length > 0) this.#backlogged.add(share);
    return entry;
  }

  #unqueued(entry: FairQueueEntry<Item>): void {
    this.#queued--;
    if (entry.group === null) return;
    const left = (this.#groupWaiting.get(entry.group) ?? 1) - 1;
    if (left > 0) this.#groupWaiting.set(entry.group, left);
    else this.#groupWaiting.delete(entry.group);
  }

  #longestQueue(): Share<Item> | null {
    let longest: Share<Item> | null = null;
    for (const share of this.#backlogged) {
      if (longest === null || share.waiting.length > longest.waiting.length) longest = share;
    }
    return longest;
  }

  #shareOf(principal: string): Share<Item> {
    let share = this.#shares.get(principal);
    if (share === undefined) {
      if (this.#shares.size >= REMEMBERED_DEBTORS) this.#forgiveOldestDebts();
      share = { principal, waiting: [], running: 0, finish: 0 };
      this.#shares.set(principal, share);
    }
    return share;
  }

  /** A principal with nothing queued or running is kept only while it owes thread time. */
  #forgetIfIdle(share: Share<Item>): void {
    if (share.waiting.length > 0 || share.running > 0 || share.finish > this.#virtual) return;
    this.#shares.delete(share.principal);
  }

  #forgiveOldestDebts(): void {
    for (const [principal, share] of this.#shares) {
      if (this.#shares.size < REMEMBERED_DEBTORS / 2) return;
      if (share.waiting.length === 0 && share.running === 0) this.#shares.delete(principal);
    }
  }
}
