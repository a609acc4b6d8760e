/**
 * One run of the real code in the protocol model's world: the model's actors as the code runs
 * them (per-node block IPAMs, the plain pool's direct writer — on a sticky network in the
 * "sticky" setup —, the reconciler's pass with its claim audit) over the memory store, every
 * request held at the gate until a schedule runs it. After every request the model's own
 * invariants are checked on the store (no address held twice, no key with two addresses, no
 * write dropping another writer's entry, the reconciler freeing no live attachment's entry, an
 * answered live reservation still held, not kept, and its claim naming its pool; bounded
 * progress when an ADD fails; at the end, nothing left that no live attachment owns), and the
 * rules of sticky addresses (protocol-link.writes.fixtures.ts; a reborn pod's ADD leaves no
 * address of its pod behind). Test helper of the trace link.
 */
import { reconcileOnce } from "../../reconciler/src/reconcile.js";
import { createNodeBlockIpam } from "./block-ipam.js";
import { formatIp } from "./ip.js";
import { type Assigned, createIpam } from "./ipam.js";
import { IpamCache } from "./ipam-cache.js";
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
import { type Entry, isKeptEntry, judgePoolWrite, keepRanOut, type WriteEvent } from "./protocol-link.writes.fixtures.js";
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
  /**
   * Each allocator process remembers what a long-lived one (the agent) does — an IpamCache kept
   * across its calls, lost when it crashes — so that recalled pools and claims are judged too.
   * The model abstracts them: only random schedules (a run of the model makes the reads they skip).
   */
  caches?: boolean;
  /** The memory store reads several claims in one request (batchReads): the view's read-ahead, the claims of a release together. */
  batchReads?: boolean;
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

/** Keep time of the sticky network (the "sticky" setup): a run's clock moves 1 s per request run, so some kept addresses expire. */
export const STICKY_SECONDS = 12;

/** What a run did, tallied (the tests' evidence that a kind of step was reached at all). */
export interface Tally {
  /** Requests run. */
  requests: number;
  /** Writes of unknown outcome (r2, r3). */
  unknown: number;
  crashes: number;
  /** ADDs answered, and failed. */
  answered: number;
  failed: number;
  /** Sticky: entries marked kept, held again by their key, rebound to a reborn pod's key, freed once their keep time ran out. */
  kept: number;
  heldAgain: number;
  rebound: number;
  expired: number;
}

const TALLIED: Record<WriteEvent, keyof Tally | undefined> = {
  kept: "kept",
  "held again": "heldAgain",
  rebound: "rebound",
  expired: "expired",
  freed: undefined,
};

export class LinkRun {
  readonly gate: GateType = new Gate();
  /** The store itself, read by the checks (never through the gate). */
  readonly store: IpamStore;
  private readonly actors: Actor[];
  private readonly lives = new Map<number, Life>();
  /** Pods that exist, by key. */
  private readonly alive = new Set<number>();
  private readonly gone = new Set<number>();
  private readonly caches = new Map<string, IpamCache>();
  /** The pods as a pass began (BROKEN_PODSFIRST). */
  private podsAtPass = new Set<number>();
  /** Key -> [pool, address] answered to it (cleared by its DEL). */
  private readonly answered = new Map<number, [number, number]>();
  /** Actors whose ADD met no other actor's write and no unknown outcome. */
  private readonly calm = new Set<number>();
  private readonly failures: Error[] = [];
  /** What the model's ADD answered without a write (`held`), for the code's answer to match. */
  private readonly expected = new Map<number, [number, number]>();
  /** Requests run so far: the clock's seconds. */
  private tick = 0;
  /** The clock as the last reconciler pass began: at the end, no entry kept past its keep time then. */
  private passStartedAt = new Date(0);
  /** Every request run, for the messages. */
  readonly log: string[] = [];
  readonly tally: Tally = { requests: 0, unknown: 0, crashes: 0, answered: 0, failed: 0, kept: 0, heldAgain: 0, rebound: 0, expired: 0 };

  constructor(readonly options: RunOptions) {
    this.actors = actorsOf(options.setup);
    this.store = createMemoryStore({ batchReads: options.batchReads === true });
  }

  async start(): Promise<void> {
    const { alive, answered } = await seed(this.store, this.options.setup);
    for (const k of alive) this.alive.add(k);
    for (const [k, p, a] of answered) this.answered.set(k, [p, a]);
  }

  private readonly now = () => new Date(Date.UTC(2026, 0, 2) + this.tick * 1000);

  private get sticky(): boolean {
    return this.options.setup.mode === "sticky";
  }

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
      this.passStartedAt = this.now();
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
    const cache = this.cacheOf(id, epoch);
    const ipam = plain
      ? createIpam({ store, retry, now: this.now, ...cache })
      : createNodeBlockIpam({ store, node: nodeName(node), blockSize: BLOCK_SIZE, retry, now: this.now, ...cache });
    const range = plain ? PLAIN_RANGE : BLOCK_RANGE;
    const podRef = podRefOf(this.options.setup.podOf[key] ?? key);
    const sticky = plain && this.sticky;
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
      this.tally.failed += 1;
      await this.addFailed(id, plain, error);
      return;
    }
    if (got === undefined) return;
    this.tally.answered += 1;
    const answered: [number, number] = [poolNumber(got.pool), ADDRESSES.indexOf(formatIp(got.address))];
    const expected = this.expected.get(id);
    this.expected.delete(id);
    if (expected !== undefined && (expected[0] !== answered[0] || expected[1] !== answered[1])) {
      throw new Divergence(
        `the model's @${id} ADD answered a${expected[1]} in pool ${expected[0]}, the code's a${answered[1]} in pool ${answered[0]}`,
      );
    }
    this.answer(key, answered[0], answered[1], `@${id}'s ADD`);
    if (sticky) await this.leftBehind(key, answered[1]);
  }

  /**
   * Sticky: an ADD that answered left no address of its pod that it should have taken back — a
   * sticky entry of its pod name under another key, kept or held for another UID (DESIGN.md: such
   * a reservation is rebound, not a new address allocated).
   */
  private async leftBehind(key: number, address: number): Promise<void> {
    const podRef = podRefOf(this.options.setup.podOf[key] ?? key);
    const left = (await this.holdings()).find(
      (e) => e.podRef === podRef && e.key !== key && e.sticky !== undefined && (isKeptEntry(e) || e.podUid !== uidOf(key)),
    );
    if (left !== undefined) {
      this.fail(
        `key ${key}'s ADD answered a${address} and left its pod's address a${left.address} (key ${left.key}'s${isKeptEntry(left) ? ", kept" : ""}) behind`,
      );
    }
  }

  /** The process's memory (RunOptions.caches): one per life of the actor. */
  private cacheOf(id: number, epoch: number): { cache?: IpamCache } {
    if (this.options.caches !== true) return {};
    const life = `${id}/${epoch}`;
    const cache = this.caches.get(life) ?? new IpamCache();
    this.caches.set(life, cache);
    return { cache };
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
    this.tally.crashes += 1;
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
    this.tick += 1;
    this.tally.requests += 1;
    const ran = await this.gate.run(request, write ? outcome : "r1");
    this.log.push(`${describeRequest(request)}${write ? ` ${outcome}` : ""}`);
    if (write) {
      if (outcome === "r2" || outcome === "r3") {
        this.tally.unknown += 1;
        this.calm.delete(request.actor);
      }
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
    for (const pool of [1, 2, 3]) {
      const stored = await this.store.readPool(POOLS[pool] as PoolRef);
      for (const r of stored?.pool.reservations() ?? []) {
        out.push({
          pool,
          address: addressAt(pool, r.offset),
          key: keyNumber(r.key),
          podRef: r.podRef ?? "",
          podUid: r.podUid ?? "",
          sticky: r.sticky,
          releasedAt: r.releasedAt,
        });
      }
    }
    return out;
  }

  private fail(message: string): never {
    throw new InvariantViolation(`${message}\nrequests run: ${this.log.join("; ")}`);
  }

  /**
   * A pool write drops no other writer's entry; the reconciler's drops only dead attachments';
   * sticky entries change only as the sticky rules allow (judgePoolWrite); an ADD's landing is its answer.
   */
  private async checkWrite(request: Request, before: Entry[], outcome: Outcome): Promise<void> {
    const after = await this.holdings();
    const pool = request.obj;
    const life = this.life(request.actor);
    const own = request.actor === 3 ? undefined : this.actor(request.actor);
    const command = life.command === "pass" ? undefined : life.command;
    const judged = judgePoolWrite(pool, before, after, {
      what: describeRequest(request),
      actor: request.actor,
      ...(command === undefined ? {} : { command }),
      ...(own === undefined
        ? {}
        : { key: own.key, podRef: podRefOf(this.options.setup.podOf[own.key] ?? own.key), podUid: uidOf(own.key) }),
      sticky: this.sticky && own?.node === 0,
      alive: (k) => this.alive.has(k),
      now: this.now(),
    });
    if (judged.violation !== undefined) this.fail(judged.violation);
    for (const event of judged.events) {
      const counted = TALLIED[event];
      if (counted !== undefined) this.tally[counted] += 1;
    }
    if (own !== undefined && life.command === "add" && outcome === "r1") {
      const placed = after.find((e) => e.pool === pool && e.key === own.key && !isKeptEntry(e));
      const had = before.some((e) => e.pool === pool && e.key === own.key && !isKeptEntry(e));
      if (placed !== undefined && !had) this.answer(own.key, pool, placed.address, describeRequest(request));
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

  /**
   * Bounded progress: an ADD that met no other actor's write and no unknown outcome since it began
   * fails only when no address was free. With a memory (RunOptions.caches) one attempt more: a pool
   * recalled as last seen before the call began may be stale, and its write conflicts once (the
   * pool is then forgotten and read afresh) — so the claim is made for two attempts or more.
   */
  private async addFailed(id: number, plain: boolean, error: unknown): Promise<void> {
    if (!this.calm.has(id)) return;
    if (this.options.caches === true && this.options.tries.allocators < 2) return;
    const held = await this.holdings();
    const free = [0, 1, 2, 3].filter((a) => (plain ? a <= 2 : true) && !held.some((e) => e.address === a));
    if (free.length > 0) {
      this.fail(`@${id}'s ADD failed (${(error as Error).message}) with no other writer since it began and a${free.join(", a")} free`);
    }
  }

  /** After every request: no address held twice, no key with two addresses, answered live reservations held (not kept) and claimed. */
  async check(step: string): Promise<void> {
    if (this.failures.length > 0) throw this.failures[0];
    const held = await this.holdings();
    for (const e of held) {
      const twice = held.find((x) => (x.pool !== e.pool || x.address !== e.address) && (x.address === e.address || x.key === e.key));
      if (twice !== undefined)
        this.fail(
          `after ${step}: key ${e.key} at a${e.address} of pool ${e.pool} and key ${twice.key} at a${twice.address} of pool ${twice.pool}`,
        );
    }
    for (const [k, [p, a]] of this.answered) {
      if (!this.alive.has(k)) continue;
      const entry = held.find((e) => e.pool === p && e.address === a && e.key === k);
      if (entry === undefined) this.fail(`after ${step}: key ${k}'s answered a${a} in pool ${p} is lost`);
      if (isKeptEntry(entry)) this.fail(`after ${step}: key ${k}'s answered a${a} in pool ${p} is marked kept, its attachment live`);
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
      const entries = held.filter((e) => e.address === a);
      for (const e of entries) {
        const { pool: p, key: k } = e;
        // a kept entry outlives its attachment until its keep time runs out; the last pass frees an expired one
        if (!this.alive.has(k) && !isKeptEntry(e)) this.fail(`at the end: key ${k}'s entry at a${a} of pool ${p}, its attachment dead`);
        if (isKeptEntry(e) && keepRanOut(e, this.passStartedAt))
          this.fail(`at the end: key ${k}'s entry at a${a} of pool ${p}, kept since ${e.releasedAt}, past its keep time`);
        if (claim === undefined || poolNumber(claim.pool) !== p || keyNumber(claim.key) !== k)
          this.fail(`at the end: key ${k}'s entry at a${a} of pool ${p} without its claim`);
      }
      if (claim !== undefined && !entries.some((e) => e.pool === poolNumber(claim.pool) && e.key === keyNumber(claim.key))) {
        this.fail(`at the end: a claim of a${a} naming pool ${poolNumber(claim.pool)} key ${keyNumber(claim.key)}, no such entry`);
      }
    }
  }
}
