/**
 * CPU time per thread of a local process, from /proc: the harness reads it around each
 * scenario to say what one request (or bundle) costs the service's main thread, its other
 * threads (the CPU pool's workers and V8's garbage-collection helpers), and the load client.
 *
 * CPU time, unlike throughput, does not depend much on what else runs on the machine, so
 * these figures show where the time goes even when the run shares its cores.
 */
import { readdirSync, readFileSync } from "node:fs";

/** Linux reports thread times in clock ticks; USER_HZ is 100 on every Linux architecture. */
const TICKS_PER_SECOND = 100;

/** Seconds of CPU (user + system) of each thread of `pid`, by thread id; null where /proc cannot tell. */
export function threadCpuSeconds(pid: number): Map<number, number> | null {
  let threads: string[];
  try {
    threads = readdirSync(`/proc/${pid}/task`);
  } catch {
    return null;
  }
  const seconds = new Map<number, number>();
  for (const tid of threads) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8");
      // Fields after the command name, which may itself hold spaces and parentheses.
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      seconds.set(Number(tid), (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND);
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return seconds;
}

export interface CpuPerItem {
  /** The process's main thread: HTTP, access control, dispatch, logging. */
  mainThread: number;
  /** Every other thread of the service process (and of its queue worker process, if any). */
  otherThreads: number;
  /** The load client (this process). */
  client: number;
}

/** Measures CPU per item of the service (`pids`) and this process between `start` and `stop`. */
export class CpuMeter {
  readonly #pids: number[];
  #before: Map<number, Map<number, number> | null> = new Map();
  #clientBefore: NodeJS.CpuUsage = process.cpuUsage();

  constructor(pids: number[]) {
    this.#pids = pids;
  }

  start(): void {
    this.#before = new Map(this.#pids.map((pid) => [pid, threadCpuSeconds(pid)]));
    this.#clientBefore = process.cpuUsage();
  }

  /** Microseconds of CPU per item over the measured phase, or null when /proc cannot tell. */
  stop(items: number): CpuPerItem | null {
    const client = process.cpuUsage(this.#clientBefore);
    if (items === 0) return null;
    let mainThread = 0;
    let otherThreads = 0;
    for (const pid of this.#pids) {
      const before = this.#before.get(pid);
      const after = threadCpuSeconds(pid);
      if (before === null || before === undefined || after === null) return null;
      for (const [tid, seconds] of after) {
        const spent = seconds - (before.get(tid) ?? 0);
        if (tid === pid && pid === this.#pids[0]) mainThread += spent;
        else otherThreads += spent;
      }
    }
    const perItem = (seconds: number) => (seconds * 1e6) / items;
    return {
      mainThread: perItem(mainThread),
      otherThreads: perItem(otherThreads),
      client: (client.user + client.system) / items,
    };
  }
}
