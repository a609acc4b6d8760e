import { chmodSync, mkdirSync, unlinkSync } from "node:fs";
import { lstat, stat } from "node:fs/promises";
import { connect } from "node:net";
import { dirname } from "node:path";

/** Whether something answers on the socket. */
function answers(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(path);
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

/**
 * Makes `path` free for a new listener: its directory exists (mode 0700 when created); a stale
 * socket left by a killed agent is removed; a live agent or a file that is not a socket is an error,
 * never deleted.
 *
 * The socket is looked at with the promise `lstat`, never `lstatSync`: Node 20's synchronous stat
 * leaves its result in a process-wide array that `require()`'s realpath reads later, and a socket
 * found there makes every later `require` of a symlinked package (pnpm's layout) resolve at the
 * link and miss that package's own dependencies (nodejs/node#51142) — an agent restarted over its
 * stale socket could not load etcd3 ("Cannot find module '@grpc/grpc-js'").
 */
export async function prepareSocketPath(path: string): Promise<void> {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  await checkSocketDirectory(dirname(path));
  let stat: Awaited<ReturnType<typeof lstat>>;
  try {
    stat = await lstat(path);
  } catch {
    return;
  }
  if (!stat.isSocket()) throw new Error(`${path} exists and is not a socket; not removing it`);
  if (await answers(path)) throw new Error(`another agent is serving on ${path}`);
  unlinkSync(path);
}

/**
 * Another user who can write the socket's directory can replace the socket with one of their own
 * and answer the plugin's calls (the same address handed out twice): the directory must belong to
 * this process's user and be writable by nobody else.
 */
export async function checkSocketDirectory(dir: string): Promise<void> {
  const info = await stat(dir);
  const uid = process.geteuid?.() ?? info.uid;
  const mode = (info.mode & 0o7777).toString(8).padStart(4, "0");
  if (info.uid !== uid) {
    throw new Error(
      `socket directory ${dir} belongs to uid ${info.uid}, not to this agent's uid ${uid}: refusing it (its owner could replace the socket)`,
    );
  }
  if ((info.mode & 0o022) !== 0) {
    throw new Error(
      `socket directory ${dir} is group/other-writable (mode ${mode}): refusing it (another user could replace the socket); chmod go-w it or use a directory such as /run/ipamkit (0700)`,
    );
  }
}

/** Only root (the runtime running CNI plugins) may talk to the agent. */
export function restrictSocket(path: string): void {
  chmodSync(path, 0o600);
}
