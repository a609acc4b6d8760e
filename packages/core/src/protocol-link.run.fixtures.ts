/**
 * One run of the real code in the protocol model's world: the model's actors as the code runs
 * them (per-node block IPAMs, the plain pool's direct writer, the reconciler's pass with its claim
 * audit) over the memory store, every request held at the gate until a schedule runs it. After
 * every request the model's own invariants are checked on the store (no address held twice, no
 * key with two addresses, no write dropping another writer's entry, the reconciler freeing no
 * live attachment's entry, an answered live reservation still held and its claim naming its
 * pool; bounded progress when an ADD fails; at the end, nothing left that no live attachment
 * owns). Test helper of the trace link.
 */
import { reconcileOnce } from "../../reconciler/src/reconcile.js";
import { createNodeBlockIpam } from "./block-ipam.js";
import { formatIp } from "./ip.js";
import { type Assigned, createIpam } from "./ipam.js";
import { createMemoryStore } from "./memory-store.js";
import {
  blindStore,
  describeRequest,
  Gate,
  type Gate as GateType,
  gatedPods,
  gatedStore,
  type Outcome,
  type Ran,
  type Request,
  versionlessDeletes,
  WRITES,
} from "./protocol-link.gate.fixtures.js";
import {
  type Actor,
  ADDRESSES,
  actorsOf,
  addressAt,
  BLOCK_RANGE,
  BLOCK_SIZE,
  keyNumber,
  keyOf,
  nodeName,
  PLAIN_RANGE,
  POOLS,
  podRefOf,
  poolNumber,
  type Setup,
  seed,
  stateLine,
  uidOf,
} from "./protocol-link.world.fixtures.js";
import type { PodFacts } from "./reconcile-plan.js";
import type { RetryOptions } from "./retry.js";
import type { IpamStore, PoolRef } from "./store.js";

/** The code broke one of the model's invariants. */
export class InvariantViolation extends Error {
  override readonly name = "InvariantViolation";
}

/** The code did not do what the schedule (the model) says it does at this point. */
export class Divergence extends Error {
  override readonly name = "Divergence";
}

export interface RunOptions {
  setup: Setup;
  /** Attempts of the allocators' and the reconciler's retry helper (the model's ATRY, RTRY). */
  tries: { allocators: number; reconciler: number };
  /** BROKEN_BLIND: every pool write ignores the version. */
  blind?: boolean;
  /** BROKEN_DELNOVER: a DEL's claim deletes ignore the version. */
  delNoVersion?: boolean;
  /** BROKEN_PODSFIRST: the pods answer as they were when the pass began, before it read the pools. */
  podsFirst?: boolean;
}

type Command = "add" | "del" | "del kept" | "pass";

interface Life {
  epoch: number;
  command?: Command;
  /** The command's call, settled when it answered (or never, when the actor crashed). */
  call?: Promise<void>;
  done: boolean;
}

const sleep = async () => {};

/** Keep time of a sticky network (Setup.sticky): a run's clock moves 1 s per request, so some kept addresses expire. */
export const STICKY_SECONDS = 20;

/** One entry: pool, address, key, and whether it is kept (sticky: released, held by no attachment). */
type Entry = [pool: number, address: number, key: number, kept: boolean, podRef: string];

export class LinkRun {
  readonly gate: GateType = new Gate();
  /** The store itself, read by the checks (never through the gate). */
  readonly store: IpamStore = createMemoryStore();
  private readonly actors: Actor[];
  private readonly lives = new Map<number, Life>();
  /** Pods that exist, by key. */
  private readonly alive = new Set<number>();
  private readonly gone = new Set<number>();
  /** The pods as a pass began (BROKEN_PODSFIRST). */
  private podsAtPass = new Set<number>();
  /** Key -> [pool, address] answered to it (cleared by its DEL). */
  private readonly answered = new Map<number, [number, number]>();
  /** Actors whose ADD met no other actor's write and no unknown outcome. */
  private readonly calm = new Set<number>();
  private readonly failures: Error[] = [];
  /** What the model's ADD answered without a write (`held`), for the code's answer to match. */
  private readonly expected = new Map<number, [number, number]>();
  private tick = 0;
  /** Every request run, for the messages. */
  readonly log: string[] = [];

  constructor(readonly options: RunOptions) {
    this.actors = actorsOf(options.setup);
  }

  async start(): Promise<void> {
    const { alive, answered } = await seed(this.store, this.options.setup);
    for (const k of alive) this.alive.add(k);
    for (const [k, p, a] of answered) this.answered.set(k, [p, a]);
  }

  private readonly now = () => new Date(Date.UTC(2026, 0, 2) + ++this.tick * 1000);

  private retry(actor: number): RetryOptions {
    const attempts = actor === 3 ? this.options.tries.reconciler : this.options.tries.allocators;
    return { attempts, baseDelayMs: 0, sleep, random: () => 0, deadlineMs: Number.MAX_SAFE_INTEGER };
  }

  /** The actor's last command has answered (or it crashed). */
  idle(id: number): boolean {
    return this.life(id).done;
  }

  /** Key k's pod was deleted (its last DEL began, or its actor crashed). */
  podGone(key: number): boolean {
    return this.gone.has(key);
  }

  /** Key k's pod exists. */
  podAlive(key: number): boolean {
    return this.alive.has(key);
  }

  /** The held requests of the actor's current life. */
  requests(id: number): Request[] {
    return this.gate.pending(id).filter((r) => r.epoch === this.life(id).epoch);
  }

  private life(actor: number): Life {
    const life = this.lives.get(actor) ?? { epoch: 0, done: true };
    this.lives.set(actor, life);
    return life;
  }

  private actor(id: number): Actor {
    const found = this.actors.find((a) => a.id === id);
    if (found === undefined) throw new Divergence(`no actor ${id} in this configuration`);
    return found;
  }

  /**
   * Lets every call run until it waits at the gate, or answers. A few paths back off on a real
   * timer (a claim drop after a lost race and after a fence uses the retry helper's defaults, not
   * the call's options): waited for, a few ms at a time.
   */
  async settle(): Promise<void> {
    for (let round = 0; round < 500; round++) {
      for (let i = 0; i < 3; i++) await new Promise<void>((resolve) => setImmediate(resolve));
      const waiting = [...this.lives.entries()].some(([id, life]) => !life.done && this.requests(id).length === 0);
      if (!waiting) return;
      await new Promise<void>((resolve) => setTimeout(resolve, 2));
    }
  }

  /** Starts an actor's next command: an allocator's ADD or DEL, or a reconciler pass. */
  async command(id: number, command: Command): Promise<void> {
    await this.settle();
    const life = this.life(id);
    if (!life.done) throw new Divergence(`@${id} ${command}: its ${life.command} is still running (${this.pendingText(id)})`);
    if (id === 3) {
      // a pass after a crashed one runs in a new life; the crashed one's requests stay held
      life.epoch += 1;
      this.podsAtPass = new Set(this.alive);
    }
    life.command = command;
    life.done = false;
    const epoch = life.epoch;
    const call = id === 3 ? this.pass(epoch) : this.allocatorCall(this.actor(id), command, epoch);
    life.call = call.then(
      () => {
        if (this.life(id).epoch === epoch) this.life(id).done = true;
      },
      (error: unknown) => {
        this.failures.push(error instanceof Error ? error : new Error(String(error)));
      },
    );
    await this.settle();
  }

  private async allocatorCall(actor: Actor, command: Command, epoch: number): Promise<void> {
    const { id, key, node } = actor;
    const plain = node === 0;
    if (command === "add") {
      if (this.options.setup.mode !== "same-key") this.alive.add(key);
      this.calm.add(id);
    } else {
      this.answered.delete(key);
      if (command === "del") {
        this.alive.delete(key);
        this.gone.add(key);
      }
    }
    let store = this.sharedFor(command !== "add");
    store = gatedStore(store, this.gate, id, epoch);
    const retry = this.retry(id);
    const ipam = plain
      ? createIpam({ store, retry, now: this.now })
      : createNodeBlockIpam({ store, node: nodeName(node), blockSize: BLOCK_SIZE, retry, now: this.now });
    const range = plain ? PLAIN_RANGE : BLOCK_RANGE;
    const podRef = podRefOf(this.options.setup.podOf[key] ?? key);
    const sticky = plain && this.options.setup.mode === "sticky";
    if (command !== "add") {
      await ipam.release({ ranges: [range], key: keyOf(key), sticky }).catch(() => undefined);
      return;
    }
    let got: Assigned | undefined;
    try {
      [got] = await ipam.allocate({
        ranges: [range],
        key: keyOf(key),
        podRef,
        podUid: uidOf(key),
        ...(sticky ? { sticky: STICKY_SECONDS } : {}),
      });
    } catch (error) {
      await this.addFailed(id, plain, error);
      return;
    }
    if (got === undefined) return;
    const answered: [number, number] = [poolNumber(got.pool), ADDRESSES.indexOf(formatIp(got.address))];
    const expected = this.expected.get(id);
    this.expected.delete(id);
    if (expected !== undefined && (expected[0] !== answered[0] || expected[1] !== answered[1])) {
      throw new Divergence(
        `the model's @${id} ADD answered a${expected[1]} in pool ${expected[0]}, the code's a${answered[1]} in pool ${answered[0]}`,
      );
    }
    this.answer(key, answered[0], answered[1], `@${id}'s ADD`);
  }

  private sharedFor(del: boolean): IpamStore {
    let store = this.store;
    if (this.options.blind === true) store = blindStore(store);
    if (del && this.options.delNoVersion === true) store = versionlessDeletes(store);
    return store;
  }

  private async pass(epoch: number): Promise<void> {
    const pods = () => {
      const source = this.options.podsFirst === true ? this.podsAtPass : this.alive;
      const out = new Map<string, PodFacts>();
      for (const k of source) {
        const name = this.options.setup.podOf[k] ?? k;
        out.set(podRefOf(name), { namespace: "ns", name: `p${name}`, uid: uidOf(k), phase: "Running", evictedByTaintManager: false });
      }
      return out;
    };
    await reconcileOnce({
      store: gatedStore(this.sharedFor(false), this.gate, 3, epoch),
      pods: gatedPods(this.gate, epoch, pods),
      graceMs: 0,
      concurrency: 1,
      claimSettleMs: 0,
      retry: this.retry(3),
      now: this.now,
      sleep,
    });
  }

  /** The actor dies: its requests are held for ever, an allocator's pod is gone. */
  crash(id: number): void {
    const life = this.life(id);
    this.gate.crash(id, life.epoch);
    life.done = true;
    if (id !== 3) {
      const { key } = this.actor(id);
      this.alive.delete(key);
      this.gone.add(key);
      life.epoch += 1;
    }
  }

  pendingText(id?: number): string {
    const held = this.gate.pending(id).map(describeRequest);
    return held.length === 0 ? "no request held" : `held: ${held.join(", ")}`;
  }

  /** The held request of `id` that is `op obj`, or a Divergence. */
  find(id: number, op: string, obj: number): Request {
    const epoch = this.life(id).epoch;
    const found = this.gate.pending(id).find((r) => r.epoch === epoch && r.op === op && r.obj === obj);
    if (found === undefined) {
      const state = this.life(id).done ? "its call has answered" : "its call is running";
      throw new Divergence(`the model has @${id} ${op} ${obj} next; the code does not (${state}; ${this.pendingText(id)})`);
    }
    return found;
  }

  /** Runs a held request with this outcome (the invariants are checked by `check`, after). */
  async run(request: Request, outcome: Outcome): Promise<Ran> {
    const write = WRITES.has(request.op);
    const before = write ? await this.holdings() : undefined;
    const ran = await this.gate.run(request, write ? outcome : "r1");
    this.log.push(`${describeRequest(request)}${write ? ` ${outcome}` : ""}`);
    if (write) {
      if (outcome === "r2" || outcome === "r3") this.calm.delete(request.actor);
      if (ran.applied) for (const other of [1, 2, 3]) if (other !== request.actor) this.calm.delete(other);
      if (request.op === "writePool" && ran.applied && before !== undefined) await this.checkWrite(request, before, outcome);
    }
    await this.settle();
    return ran;
  }

  async state(): Promise<string> {
    return stateLine(this.store);
  }

  /** Every entry. */
  async holdings(): Promise<Entry[]> {
    const out: Entry[] = [];
    for (const n of [1, 2, 3]) {
      const stored = await this.store.readPool(POOLS[n] as PoolRef);
      for (const r of stored?.pool.reservations() ?? [])
        out.push([n, addressAt(n, r.offset), keyNumber(r.key), r.releasedAt !== undefined, r.podRef ?? ""]);
    }
    return out;
  }

  private fail(message: string): never {
    throw new InvariantViolation(`${message}\nrequests run: ${this.log.join("; ")}`);
  }

  /** A pool write drops no other writer's entry; the reconciler's drops only dead attachments'; an ADD's landing is its answer. */
  private async checkWrite(request: Request, before: Entry[], outcome: Outcome): Promise<void> {
    const after = await this.holdings();
    const pool = request.obj;
    const life = this.life(request.actor);
    const own = request.actor === 3 ? undefined : this.actor(request.actor).key;
    const ownPod = own === undefined ? undefined : podRefOf(this.options.setup.podOf[own] ?? own);
    for (const [p, a, k, kept, podRef] of before.filter(([p]) => p === pool)) {
      if (after.some(([p2, a2, k2]) => p2 === p && a2 === a && k2 === k)) continue;
      const dels = life.command === "del" || life.command === "del kept";
      // sticky: a kept entry is nobody's attachment; an ADD takes over its own pod's (rebind)
      const sticky = this.options.setup.mode === "sticky";
      if (request.actor === 3 ? !this.alive.has(k) || kept : (dels && k === own) || (sticky && podRef === ownPod)) continue;
      this.fail(
        `${describeRequest(request)} dropped key ${k}'s entry at a${a} of pool ${p}${request.actor === 3 ? " (a live attachment's)" : ""}`,
      );
    }
    if (own !== undefined && life.command === "add" && outcome === "r1") {
      const placed = after.find(([p, , k]) => p === pool && k === own);
      const had = before.some(([p, , k]) => p === pool && k === own);
      if (placed !== undefined && !had) this.answer(own, pool, placed[1], describeRequest(request));
    }
  }

  /** An ADD answered [pool, address] to key: a live attachment's answers are one address. */
  answer(key: number, pool: number, address: number, what: string): void {
    const had = this.answered.get(key);
    if (had !== undefined && this.alive.has(key) && (had[0] !== pool || had[1] !== address)) {
      this.fail(`${what}: key ${key} answered a${address} in pool ${pool}, having been answered a${had[1]} in pool ${had[0]}`);
    }
    this.answered.set(key, [pool, address]);
  }

  /** The model's `held p a` event: the ADD answers a reservation it found, without a write (the code's, when its call answers). */
  held(id: number, pool: number, address: number): void {
    const { key } = this.actor(id);
    this.answer(key, pool, address, `@${id}'s ADD`);
    this.expected.set(id, [pool, address]);
  }

  private async addFailed(id: number, plain: boolean, error: unknown): Promise<void> {
    if (!this.calm.has(id)) return;
    const held = await this.holdings();
    const free = [0, 1, 2, 3].filter((a) => (plain ? a <= 2 : true) && !held.some(([, a2]) => a2 === a));
    if (free.length > 0) {
      this.fail(`@${id}'s ADD failed (${(error as Error).message}) with no other writer since it began and a${free.join(", a")} free`);
    }
  }

  /** After every request: no address held twice, no key with two addresses, answered live reservations held and claimed. */
  async check(step: string): Promise<void> {
    if (this.failures.length > 0) throw this.failures[0];
    const held = await this.holdings();
    for (const [p, a, k] of held) {
      const twice = held.find(([p2, a2, k2]) => (p2 !== p || a2 !== a) && (a2 === a || k2 === k));
      if (twice !== undefined)
        this.fail(`after ${step}: key ${k} at a${a} of pool ${p} and key ${twice[2]} at a${twice[1]} of pool ${twice[0]}`);
    }
    for (const [k, [p, a]] of this.answered) {
      if (!this.alive.has(k)) continue;
      if (!held.some(([p2, a2, k2]) => p2 === p && a2 === a && k2 === k))
        this.fail(`after ${step}: key ${k}'s answered a${a} in pool ${p} is lost`);
      const claim = (await this.store.readClaim({ network: "", address: ADDRESSES[a] as string }))?.claim;
      if (claim === undefined || poolNumber(claim.pool) !== p) {
        this.fail(
          `after ${step}: key ${k}'s answered a${a} in pool ${p} has ${claim === undefined ? "no claim" : `a claim naming pool ${poolNumber(claim.pool)}`}`,
        );
      }
    }
  }

  /** The reconciler's last pass has answered: no claim no entry backs, no entry without its claim, no dead attachment's entry. */
  async end(): Promise<void> {
    await this.settle();
    const life = this.life(3);
    if (!life.done) throw new Divergence(`the model's last pass has ended; the code's runs (${this.pendingText(3)})`);
    await this.check("the last pass");
    const held = await this.holdings();
    for (const [a, address] of ADDRESSES.entries()) {
      const claim = (await this.store.readClaim({ network: "", address }))?.claim;
      const entries = held.filter(([, a2]) => a2 === a);
      for (const [p, , k, kept] of entries) {
        if (!this.alive.has(k) && !kept) this.fail(`at the end: key ${k}'s entry at a${a} of pool ${p}, its attachment dead`);
        if (claim === undefined || poolNumber(claim.pool) !== p || keyNumber(claim.key) !== k)
          this.fail(`at the end: key ${k}'s entry at a${a} of pool ${p} without its claim`);
      }
      if (claim !== undefined && !entries.some(([p, , k]) => p === poolNumber(claim.pool) && k === keyNumber(claim.key))) {
        this.fail(`at the end: a claim of a${a} naming pool ${poolNumber(claim.pool)} key ${keyNumber(claim.key)}, no such entry`);
      }
    }
  }
}
