import { closeSync, constants, fstatSync, lstatSync, openSync, readdirSync, readSync, unlinkSync } from "node:fs";
import { join } from "node:path";
import {
  CNI_CODES,
  CniError,
  errorAnswer,
  JOURNAL_RECORD_MAX_BYTES,
  JOURNAL_RECORD_PREFIX,
  JOURNAL_TEMP_PREFIX,
  type JournalRecord,
  journalRecordNameOf,
  parseJournalRecord,
} from "@ipamkit/cni";
import type { Logger } from "pino";
import type { JournalStats } from "./agent-types.js";
import type { KeyedQueue } from "./pool-queue.js";
import { type AgentResponse, PROTOCOL_VERSION } from "./protocol.js";

// The DEL journal's reader (its writer is the binary: examples/cni-plugin/src/forwarder-journal.h).
// A DEL that found no agent was journaled and answered with success; this agent replays each record
// by exact key — the very DEL, through the same dispatcher and stores as a live call — when it
// starts and then every scan interval, and keeps replaying what fails (with backoff, a bounded
// number of times). The ordering rule (DESIGN.md, "The DEL journal"): a record is the release of
// one attachment *before* anything that comes later for it, so every ADD (and DEL) the agent serves
// for that attachment removes its record first, under the attachment's lock, and a replay runs
// under the same lock and only for a record still there. A replay can therefore never release
// what a later ADD reserved — nor what a later ADD found still reserved and kept (ADD is
// idempotent), which a rule on the reservation's age could not tell apart.

/** Scan the journal this often (and at start). */
export const JOURNAL_SCAN_INTERVAL_MS = 10_000;
/** A record whose replay failed this many times is dropped (logged): the reconciler frees its reservation. */
export const JOURNAL_MAX_ATTEMPTS = 20;
/** The longest wait before a failed record is replayed again (the wait doubles from the scan interval). */
export const JOURNAL_RETRY_MAX_MS = 300_000;
/** A temporary file older than this was left by a binary that died mid-write: removed. */
export const JOURNAL_TEMP_MAX_AGE_MS = 600_000;

export interface JournalOptions {
  /** The journal's directory now (the node's flat file's `agent_journal_dir`), undefined: none. Asked at every scan. */
  dir: () => string | undefined;
  /** Runs one record's DEL as a live call would run (no deadline). */
  replay: (record: JournalRecord) => Promise<AgentResponse>;
  /** The attachments' locks, shared with the calls (keyed by record name). */
  locks: KeyedQueue;
  logger: Logger;
  stats: JournalStats;
  scanIntervalMs?: number;
  maxAttempts?: number;
  retryMaxMs?: number;
}

export interface Journal {
  /** The first scan now, then one every interval until stop(). */
  start(): void;
  /** One scan: every record due is replayed, one after another. */
  scan(): Promise<void>;
  /**
   * Runs a call for the attachment of (env, stdin) under its lock: an ADD removes the attachment's
   * record first; a DEL that succeeded removes it after. Calls that name no attachment just run.
   */
  around(env: Readonly<Record<string, string>>, stdin: string, run: () => Promise<AgentResponse>): Promise<AgentResponse>;
  /** Stops scanning; waits for the scan in progress. */
  stop(): Promise<void>;
}

interface Attempts {
  count: number;
  /** Not replayed again before this time (epoch ms). */
  next: number;
}

/** An ADD refused because its attachment's journal record could not be removed (code 11: the runtime retries). */
function purgeFailed(stdin: string, path: string, error: Error): AgentResponse {
  const cni = new CniError(
    CNI_CODES.TRY_AGAIN_LATER,
    `ipamkit agent: cannot remove the DEL journal record ${path} before this ADD (${error.message}); not performed`,
  );
  return { v: PROTOCOL_VERSION, exitCode: 1, stdout: errorAnswer(cni, stdin), stderr: "" };
}

/** Reads a regular file without following a link: its text, or why it is not one to replay. */
function readRecordFile(path: string, max: number): { text: string } | { problem: string } {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) return { problem: "not a regular file" };
    if (st.size > max) return { problem: `larger than ${max} bytes` };
    const buffer = Buffer.alloc(st.size);
    let read = 0;
    while (read < st.size) {
      const n = readSync(fd, buffer, read, st.size - read, read);
      if (n === 0) break;
      read += n;
    }
    return { text: buffer.subarray(0, read).toString("utf8") };
  } finally {
    closeSync(fd);
  }
}

/** Whether a directory may hold records: root's (or this process's user's), writable by nobody else. */
function trustedDir(dir: string): string | undefined {
  const st = lstatSync(dir);
  if (!st.isDirectory()) return "not a directory";
  const euid = process.geteuid?.() ?? 0;
  if (st.uid !== 0 && st.uid !== euid) return `owned by uid ${st.uid}`;
  if ((st.mode & 0o022) !== 0) return `mode ${(st.mode & 0o777).toString(8)}: group or others may write it`;
  return undefined;
}

export function createJournal(options: JournalOptions): Journal {
  const { logger, stats, locks } = options;
  const interval = options.scanIntervalMs ?? JOURNAL_SCAN_INTERVAL_MS;
  const maxAttempts = options.maxAttempts ?? JOURNAL_MAX_ATTEMPTS;
  const retryMaxMs = options.retryMaxMs ?? JOURNAL_RETRY_MAX_MS;
  const attempts = new Map<string, Attempts>();
  const warned = new Set<string>();
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let scanning: Promise<void> = Promise.resolve();
  /** The directory of the last scan: where calls purge. */
  let current: string | undefined;

  /** Removes a file if it is there (looked at first: most calls have no record, and a thrown ENOENT costs more than a look). */
  const remove = (path: string) => {
    if (lstatSync(path, { throwIfNoEntry: false }) === undefined) return;
    try {
      unlinkSync(path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    }
  };

  /** Drops a record that cannot or may no longer be replayed: the reconciler frees its reservation as an orphan. */
  const drop = (dir: string, name: string, reason: string) => {
    remove(join(dir, name));
    attempts.delete(name);
    stats.dropped++;
    logger.error({ journal: dir, record: name, reason }, "DEL journal: record dropped; the reconciler frees its reservation as an orphan");
  };

  const replayOne = async (dir: string, name: string): Promise<void> => {
    const release = await locks.acquire(name);
    try {
      const path = join(dir, name);
      let read: ReturnType<typeof readRecordFile>;
      try {
        read = readRecordFile(path, JOURNAL_RECORD_MAX_BYTES);
      } catch (error) {
        // removed meanwhile: an ADD or DEL for the attachment came first
        if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
        throw error;
      }
      if ("problem" in read) return drop(dir, name, read.problem);
      const record = parseJournalRecord(read.text);
      if (typeof record === "string") return drop(dir, name, record);
      // the name is what an ADD for the attachment purges: a record under another name could outlive that ADD
      const own = journalRecordNameOf(record.env, record.stdin);
      if (own !== name) return drop(dir, name, `its call is the attachment ${JSON.stringify(own)}, not this record's`);
      const { ino } = lstatSync(path);
      const response = await options.replay(record);
      if (response.exitCode === 0) {
        // released (or nothing was held): the record is done, unless a DEL journaled again replaced it meanwhile
        if (lstatSync(path, { throwIfNoEntry: false })?.ino === ino) remove(path);
        attempts.delete(name);
        stats.replayed++;
        logger.info({ journal: dir, record: name, journaled: new Date(record.journaled).toISOString() }, "DEL journal: replayed");
        return;
      }
      const seen = attempts.get(name) ?? { count: 0, next: 0 };
      seen.count++;
      stats.failed++;
      if (seen.count >= maxAttempts) return drop(dir, name, `its DEL failed ${seen.count} times, last: ${response.stdout.trim()}`);
      seen.next = Date.now() + Math.min(interval * 2 ** (seen.count - 1), retryMaxMs);
      attempts.set(name, seen);
      logger.warn(
        { journal: dir, record: name, attempt: seen.count, retryAt: new Date(seen.next).toISOString(), answer: response.stdout.trim() },
        "DEL journal: replay failed; retried later",
      );
    } finally {
      release();
    }
  };

  const scanDir = async (dir: string): Promise<void> => {
    let names: string[];
    try {
      const unsafe = trustedDir(dir);
      if (unsafe !== undefined) {
        if (!warned.has(dir)) logger.error({ journal: dir, reason: unsafe }, "DEL journal: directory not used");
        warned.add(dir);
        return;
      }
      names = readdirSync(dir).sort();
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") logger.error({ journal: dir, err: error }, "DEL journal: cannot read it");
      return;
    }
    for (const name of names) {
      if (stopped) return;
      if (name.startsWith(JOURNAL_TEMP_PREFIX)) {
        const st = lstatSync(join(dir, name), { throwIfNoEntry: false });
        if (st !== undefined && Date.now() - st.mtimeMs > JOURNAL_TEMP_MAX_AGE_MS) remove(join(dir, name));
        continue;
      }
      // a directory, link or device is no record the binary wrote (it writes regular files only)
      if (!name.startsWith(JOURNAL_RECORD_PREFIX) || !lstatSync(join(dir, name), { throwIfNoEntry: false })?.isFile()) {
        if (!warned.has(`${dir}/${name}`)) logger.warn({ journal: dir, entry: name }, "DEL journal: not a record; left alone");
        warned.add(`${dir}/${name}`);
        continue;
      }
      if ((attempts.get(name)?.next ?? 0) > Date.now()) continue;
      try {
        await replayOne(dir, name);
      } catch (error) {
        logger.error({ journal: dir, record: name, err: error }, "DEL journal: cannot replay the record");
      }
    }
    stats.pending = readdirSync(dir).filter((name) => name.startsWith(JOURNAL_RECORD_PREFIX)).length;
  };

  const scan = (): Promise<void> => {
    scanning = scanning.then(async () => {
      if (stopped) return;
      const dir = options.dir();
      current = dir;
      if (dir !== undefined) await scanDir(dir);
    });
    return scanning;
  };

  const tick = () => {
    void scan().finally(() => {
      if (!stopped) timer = setTimeout(tick, interval);
    });
  };

  return {
    start() {
      // known before the first call is served: every ADD purges from the first
      current = options.dir();
      tick();
    },
    scan,
    async around(env, stdin, run) {
      const command = env.CNI_COMMAND;
      const name = command === "ADD" || command === "DEL" ? journalRecordNameOf(env, stdin) : undefined;
      if (name === undefined) return run();
      const release = await locks.acquire(name);
      try {
        const dir = current;
        // before the ADD: no replay may release what it reserves, or finds reserved and keeps
        if (command === "ADD" && dir !== undefined) {
          try {
            remove(join(dir, name));
          } catch (error) {
            // a record that stays could release this ADD's address later: not performed
            logger.error({ journal: dir, record: name, err: error }, "DEL journal: cannot remove the record before an ADD");
            return purgeFailed(stdin, join(dir, name), error as Error);
          }
        }
        const response = await run();
        if (command === "DEL" && response.exitCode === 0 && dir !== undefined) {
          try {
            remove(join(dir, name));
          } catch (error) {
            // harmless: its replay releases nothing more (an ADD in between would purge it first)
            logger.warn({ journal: dir, record: name, err: error }, "DEL journal: cannot remove the record after a DEL");
          }
        }
        return response;
      } finally {
        release();
      }
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await scanning;
    },
  };
}
