/**
 * Bodies one principal may be sending at once on routes that take large ones (`POST
 * /crystals`, `CRYSTAL_UPLOADS_PER_KEY`). The limit is per principal across the deployment
 * (issue 34, finding 6: one key held 8 uploads over two webs where 4 are allowed), so
 * distributed mode keeps the slots in Redis (`RedisUploadSlots`, src/redis) and embedded mode
 * here, in the process. Both sit behind `UploadSlots`.
 */

/** One body being sent; released once, when its response closes. */
export interface UploadSlot {
  release(): void;
}

export interface UploadSlots {
  /** The limit every principal is held to. */
  readonly limit: number;
  /** A slot for `principal`, or null when it already holds `limit`. */
  acquire(principal: string): Promise<UploadSlot | null>;
}

/** Slots counted in this process's memory; a principal holding none is forgotten. */
export class InProcessUploadSlots implements UploadSlots {
  readonly limit: number;
  readonly #held = new Map<string, number>();

  constructor(limit: number) {
    this.limit = limit;
  }

  async acquire(principal: string): Promise<UploadSlot | null> {
    return this.acquireNow(principal);
  }

  /** `acquire` without waiting: for the Redis slots' fallback, already on a promise. */
  acquireNow(principal: string): UploadSlot | null {
    const held = this.#held.get(principal) ?? 0;
    if (held >= this.limit) return null;
    this.#held.set(principal, held + 1);
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        const left = (this.#held.get(principal) ?? 1) - 1;
        if (left <= 0) this.#held.delete(principal);
        else this.#held.set(principal, left);
      },
    };
  }

  /** Slots `principal` holds now. */
  heldBy(principal: string): number {
    return this.#held.get(principal) ?? 0;
  }
}
