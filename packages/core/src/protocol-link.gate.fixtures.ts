/**
 * Every store request of the code under test, held at a gate until the schedule runs it, named
 * as the protocol model names it ("readPool 1", "writeClaim 0", ...). A schedule — a spin trail,
 * a random simulation of the model, or fast-check — picks which held request runs next and with
 * which outcome (as answered, or of unknown outcome: sent and answer lost, or lost before the
 * store). A crashed process's requests are held for ever. Test helper of the trace link.
 */
import { delegatingStore } from "./complete-store.js";
import { StoreConflictError, StoreUnavailableError } from "./errors.js";
import { isAffinityNetwork } from "./node-blocks.js";
import { addressNumber, blockNumber, poolNumber } from "./protocol-link.world.fixtures.js";
import type { PodFacts } from "./reconcile-plan.js";
import type { ClaimRef, IpamStore, PoolRef, ScannedClaim, ScannedPool } from "./store.js";

export type Op =
  | "readPool"
  | "writePool"
  | "readClaim"
  | "readClaims"
  | "writeClaim"
  | "deleteClaim"
  | "readAff"
  /** Several affinity claims in one request (a store with batchReads: the view's read-ahead); not a step of the model. */
  | "readAffs"
  | "writeAff"
  | "listPools"
  | "listClaims"
  | "listPods"
  | "getPod";

/** How a request is answered: r0/r1 as the store answers (conflict/done); r2 sent, answer lost; r3 lost before the store. */
export type Outcome = "r0" | "r1" | "r2" | "r3";

export const WRITES: ReadonlySet<Op> = new Set<Op>(["writePool", "writeClaim", "deleteClaim", "writeAff"]);

export interface Request {
  readonly actor: number;
  /** The actor's life the request belongs to (a crashed one's are held for ever). */
  readonly epoch: number;
  readonly op: Op;
  readonly obj: number;
  /** The request on the store itself. */
  readonly run: () => Promise<unknown>;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: unknown) => void;
}

export const describeRequest = (r: Pick<Request, "actor" | "op" | "obj">) => `@${r.actor} ${r.op} ${r.obj}`;

/** What running a request did on the store. */
export interface Ran {
  /** The call reached the store (not r3). */
  sent: boolean;
  /** The store call itself succeeded (a write applied). */
  applied: boolean;
  /** It conflicted. */
  conflict: boolean;
}

const unknownOutcome = () => new StoreUnavailableError("the answer was lost (protocol link)", { outcomeUnknown: true });

export class Gate {
  private held: Request[] = [];
  private readonly dead = new Set<string>();

  /** A request of actor/epoch: held until run; for ever when that life crashed. */
  request<T>(actor: number, epoch: number, op: Op, obj: number, run: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (this.dead.has(`${actor}/${epoch}`)) return;
      this.held.push({ actor, epoch, op, obj, run, resolve: resolve as (v: unknown) => void, reject });
    });
  }

  pending(actor?: number): Request[] {
    return this.held.filter((r) => actor === undefined || r.actor === actor);
  }

  /** A life ends: its requests held and to come never run. */
  crash(actor: number, epoch: number): void {
    this.dead.add(`${actor}/${epoch}`);
    this.held = this.held.filter((r) => !(r.actor === actor && r.epoch === epoch));
  }

  /** Runs a held request with this outcome, hands the caller its answer. */
  async run(request: Request, outcome: Outcome): Promise<Ran> {
    this.held = this.held.filter((r) => r !== request);
    if (outcome === "r3") {
      request.reject(unknownOutcome());
      return { sent: false, applied: false, conflict: false };
    }
    let value: unknown;
    let error: unknown;
    let failed = false;
    try {
      value = await request.run();
    } catch (e) {
      failed = true;
      error = e;
    }
    const ran = { sent: true, applied: !failed, conflict: failed && error instanceof StoreConflictError };
    if (outcome === "r2") request.reject(unknownOutcome());
    else if (failed) request.reject(error);
    else request.resolve(value);
    return ran;
  }
}

const claimOp = (ref: ClaimRef, address: Op, affinity: Op): [Op, number] =>
  isAffinityNetwork(ref.network) ? [affinity, blockNumber(ref)] : [address, addressNumber(ref.address)];

const mask = (refs: readonly ClaimRef[]) => refs.reduce((m, ref) => m | (1 << addressNumber(ref.address)), 0);
const blockMask = (refs: readonly ClaimRef[]) => refs.reduce((m, ref) => m | (1 << blockNumber(ref)), 0);

/** The store as one life of one actor sees it: every request held at the gate. */
export function gatedStore(store: IpamStore, gate: Gate, actor: number, epoch: number): IpamStore {
  const at = <T>(op: Op, obj: number, run: () => Promise<T>) => gate.request(actor, epoch, op, obj, run);
  const readPool = (ref: PoolRef) => at("readPool", poolNumber(ref), () => store.readPool(ref));
  const readClaims = (refs: readonly ClaimRef[], options?: { fresh?: boolean }) => {
    const [only] = refs;
    if (refs.length === 1 && only !== undefined) {
      const [op, obj] = claimOp(only, "readClaim", "readAff");
      return at(op, obj, () => store.readClaims(refs, options));
    }
    if (refs.some((ref) => isAffinityNetwork(ref.network))) return at("readAffs", blockMask(refs), () => store.readClaims(refs, options));
    return at("readClaims", mask(refs), () => store.readClaims(refs, options));
  };
  const listPools = async (options?: { contents?: boolean }) => {
    const refs = await at("listPools", 0, () => store.listPools());
    if (options?.contents !== true) return refs;
    const out: ScannedPool[] = [];
    for (const ref of refs) {
      const stored = await readPool(ref);
      if (stored !== undefined) out.push({ ref, stored });
    }
    return out;
  };
  const listClaims = async (networks: string | readonly string[], options?: { contents?: boolean }) => {
    const asked = typeof networks === "string" ? [networks] : networks;
    const refs = await at("listClaims", 0, () => store.listClaims(asked));
    if (options?.contents !== true) return refs;
    if (refs.length === 0) return [];
    const read = await at("readClaims", mask(refs), () => store.readClaims(refs));
    return refs.flatMap((ref, i): ScannedClaim[] => {
      const stored = read[i];
      return stored === undefined ? [] : [{ ref, stored }];
    });
  };
  return delegatingStore(store, {
    readPool,
    writePool: (ref, pool, expected) => at("writePool", poolNumber(ref), () => store.writePool(ref, pool, expected)),
    readClaims,
    readClaim: async (ref, options) => (await readClaims([ref], options))[0],
    writeClaim: (ref, claim, expected) => {
      const [op, obj] = claimOp(ref, "writeClaim", "writeAff");
      return at(op, obj, () => store.writeClaim(ref, claim, expected));
    },
    deleteClaim: (ref, expected) => at("deleteClaim", addressNumber(ref.address), () => store.deleteClaim(ref, expected)),
    listPools: listPools as IpamStore["listPools"],
    listClaims: listClaims as IpamStore["listClaims"],
  });
}

/** Pool writes that ignore the version (BROKEN_BLIND): written at whatever version the pool has. */
export function blindStore(store: IpamStore): IpamStore {
  return delegatingStore(store, {
    writePool: async (ref, pool) => store.writePool(ref, pool, (await store.readPool(ref))?.version),
  });
}

/** Claim deletes that ignore the version (BROKEN_DELNOVER, a DEL's): whatever claim is there goes. */
export function versionlessDeletes(store: IpamStore): IpamStore {
  return delegatingStore(store, {
    deleteClaim: async (ref) => {
      const current = await store.readClaim(ref);
      if (current === undefined) throw new StoreConflictError(ref.address);
      await store.deleteClaim(ref, current.version);
    },
  });
}

/** The pods, read through the gate: `list` (listPods) and `get` (getPod <pod name>). */
export interface GatedPods {
  list(): Promise<Map<string, PodFacts>>;
  get(namespace: string, name: string): Promise<PodFacts | undefined>;
  close(): void;
}

export function gatedPods(gate: Gate, epoch: number, pods: () => Map<string, PodFacts>): GatedPods {
  return {
    list: () => gate.request(3, epoch, "listPods", 0, async () => pods()),
    get: (namespace, name) => gate.request(3, epoch, "getPod", Number(name.slice(1)), async () => pods().get(`${namespace}/${name}`)),
    close() {},
  };
}
