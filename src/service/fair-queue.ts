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
 * - **Long messages: at most threads − 1 while another principal is about.** A message whose
 *   tasks cost at least `longTaskCost` together is long (one large task, or a batch of many
 *   small ones). A principal's long messages hold at most threads − 1 threads
 *   while any other principal has a task waiting or running, or sent one within
 *   `longTaskReserveMs`: so the thread another principal's short task needs is free when it
 *   arrives, instead of it waiting for a long task to end. A principal alone (nobody else for
 *   that long) still gets every thread; the check is made whenever a thread frees or a task
 *   arrives, so once the others have gone quiet the next thread to free lifts it.
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
  /** The thread time it was expected to take when it was sent (0 while it waits). */
  readonly estimatedMs: number;
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
  /** Tasks of at least this cost are long (default: none is). */
  longTaskCost?: number;
  /**
   * How long after another principal's last task a principal's long tasks still leave a thread
   * to the others (default 0: only while another has a task waiting or running).
   */
  longTaskReserveMs?: number;
  /** Milliseconds, monotonic (tests pass their own). */
  now?: () => number;
}

/** What the queue knows of one principal. */
interface Share<Item> {
  readonly principal: string;
  readonly waiting: Entry<Item>[];
  /** Messages holding its tasks on a thread. */
  running: number;
  /** Of those, messages holding at least one of its long tasks. */
  runningLong: number;
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
  /** The last two distinct principals to send a task, latest first, and when. */
  #arrivals: { principal: string; at: number }[] = [];

  constructor(options: FairQueueOptions) {
    this.#options = {
      now: () => performance.now(),
      longTaskCost: Number.POSITIVE_INFINITY,
      longTaskReserveMs: 0,
      ...options,
    };
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
    this.#arrived(principal);
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
    const inMessage = new Set<Share<Item>>();
    const first = this.#nextShare(null, inMessage, 0);
    if (first === null) return null;
    const startedAt = this.#options.now();
    const head = this.#send(first, startedAt);
    const entries = [head];
    inMessage.add(first);
    let cost = head.cost;
    if (head.group !== null) {
      const groupWaiting = (this.#groupWaiting.get(head.group) ?? 0) + 1;
      const size = Math.min(this.#options.maxMessageItems, Math.ceil(groupWaiting / freeThreads));
      while (entries.length < size) {
        const share = this.#nextShare(head.group, inMessage, cost);
        if (share === null) break;
        const entry = this.#send(share, startedAt);
        entries.push(entry);
        inMessage.add(share);
        cost += entry.cost;
      }
    }
    for (const share of inMessage) share.running++;
    if (cost >= this.#options.longTaskCost) {
      for (const share of inMessage) share.runningLong++;
    }
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
      if (totalCost >= this.#options.longTaskCost) share.runningLong--;
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
   * `inMessage` holds the principals of the message being filled and `cost` its cost so far
   * (empty and 0 for a new message). With `group`, only principals whose next task is of that
   * group, and those already in the message may add to it whatever they hold.
   */
  #nextShare(
    group: string | null,
    inMessage: ReadonlySet<Share<Item>>,
    cost: number,
  ): Share<Item> | null {
    // With one thread, one task in flight is all anyone can hold.
    const cap = Math.max(1, this.#options.threads - 1);
    const othersWaiting = this.#backlogged.size > 1;
    let best: Share<Item> | null = null;
    let bestStart = Number.POSITIVE_INFINITY;
    for (const share of this.#backlogged) {
      const next = share.waiting[0];
      if (next === undefined || (group !== null && next.group !== group)) continue;
      const mayTakeThread = inMessage.has(share) || share.running < cap || !othersWaiting;
      if (!mayTakeThread || !this.#mayGoLong(share, next, inMessage, cost, cap)) continue;
      const start = Math.max(share.finish, this.#virtual);
      if (start < bestStart) {
        best = share;
        bestStart = start;
      }
    }
    return best;
  }

  /**
   * Whether `next`, added to a message of `cost` holding `inMessage`, keeps the rule on long
   * messages: every principal the addition puts in a long message (all of them when it makes
   * the message long, else `share` if new to it) holds fewer than `cap` long ones, or has
   * nobody else about.
   */
  #mayGoLong(
    share: Share<Item>,
    next: Entry<Item>,
    inMessage: ReadonlySet<Share<Item>>,
    cost: number,
    cap: number,
  ): boolean {
    const longTaskCost = this.#options.longTaskCost;
    if (cost + next.cost < longTaskCost) return true;
    const alreadyLong = cost >= longTaskCost;
    if (alreadyLong && inMessage.has(share)) return true;
    const joining = alreadyLong ? [share] : [...inMessage, share];
    return joining.every((each) => each.runningLong < cap || !this.#othersAbout(each));
  }

  #arrived(principal: string): void {
    const at = this.#options.now();
    const latest = this.#arrivals[0];
    if (latest?.principal === principal) latest.at = at;
    else this.#arrivals = latest === undefined ? [{ principal, at }] : [{ principal, at }, latest];
  }

  /**
   * Whether a principal other than `share`'s has a task waiting or running, or sent one within
   * `longTaskReserveMs`.
   */
  #othersAbout(share: Share<Item>): boolean {
    if (this.#backlogged.size > (this.#backlogged.has(share) ? 1 : 0)) return true;
    if (this.#running > share.running) return true;
    const other = this.#arrivals.find((arrival) => arrival.principal !== share.principal);
    return other !== undefined && this.#options.now() - other.at <= this.#options.longTaskReserveMs;
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
      share = { principal, waiting: [], running: 0, runningLong: 0, finish: 0 };
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
