import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { IpamConfig } from "@ipamkit/cni";
import type { IpamStore } from "@ipamkit/core";
import { createFileStore } from "@ipamkit/storage-file";
import { afterEach, beforeEach, expect, it } from "vitest";
import { forwardToAgent } from "./client.js";
import { nodeFs } from "./server.fixtures.js";
import { type Agent, startAgent } from "./server.js";
import { checkSocketDirectory } from "./socket-file.js";

let dir: string;
let agent: Agent | undefined;
let opened: number;
const openStore = async (config: IpamConfig): Promise<IpamStore> => {
  opened++;
  return createFileStore({ dir: config.dataDir });
};
beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "ipamkit-deadline-"));
  writeFileSync(join(dir, "whereabouts.conf"), "{}");
  opened = 0;
  agent = await startAgent({ socketPath: join(dir, "run", "agent.sock"), openStore, fs: nodeFs(dir) });
});
afterEach(async () => {
  await agent?.close();
  agent = undefined;
  rmSync(dir, { recursive: true, force: true });
});

const socketPath = () => join(dir, "run", "agent.sock");
const conf = () =>
  JSON.stringify({
    cniVersion: "1.0.0",
    name: "net",
    ipam: { type: "ipamkit", range: "10.31.0.0/24", data_dir: join(dir, "store") },
  });
const env = { CNI_COMMAND: "ADD", CNI_CONTAINERID: "c1", CNI_IFNAME: "net1", CNI_NETNS: "/x", CNI_PATH: "/x" };

/** One request as raw bytes → the decoded answer. */
const call = (request: Record<string, unknown>) =>
  new Promise<{ exitCode: number; stdout: string }>((resolve, reject) => {
    const socket = connect(socketPath());
    let text = "";
    socket.on("data", (d) => (text += d));
    socket.on("end", () => resolve(JSON.parse(text)));
    socket.on("error", reject);
    socket.end(`${JSON.stringify({ v: 1, env, stdin: conf(), ...request })}\n`);
  });

it("a call whose deadline has passed is not performed: code 11, counted, no store opened", async () => {
  const late = await call({ deadline: Date.now() - 1_000 });
  expect(late.exitCode).toBe(1);
  expect(JSON.parse(late.stdout)).toMatchObject({
    cniVersion: "1.0.0",
    code: 11,
    msg: expect.stringMatching(/deadline passed.*not performed/),
  });
  expect(opened).toBe(0);
  expect(agent?.stats()).toMatchObject({ expired: 1, undone: 0 });
  // in time: performed
  const inTime = await forwardToAgent({ socketPath: socketPath(), env, stdin: conf(), timeoutMs: 5_000 });
  expect(JSON.parse(inTime.stdout)).toMatchObject({ ips: [{ address: "10.31.0.1/24" }] });
});

it("a deadline that is not a number is a malformed request (code 6)", async () => {
  const answer = await call({ deadline: "soon" });
  expect(JSON.parse(answer.stdout)).toMatchObject({ code: 6, msg: expect.stringContaining("deadline must be a number") });
});

it("a socket directory others can write, or another user's, is refused", async () => {
  const open = join(dir, "open");
  mkdirSync(open);
  chmodSync(open, 0o707);
  await expect(checkSocketDirectory(open)).rejects.toThrow(/group\/other-writable \(mode 0707\)/);
  await expect(startAgent({ socketPath: join(open, "a.sock"), openStore })).rejects.toThrow(/refusing it/);
  chmodSync(open, 0o755);
  await expect(checkSocketDirectory(open)).resolves.toBeUndefined();
  if (process.geteuid?.() === 0) await expect(checkSocketDirectory("/tmp")).rejects.toThrow(/mode 1777/);
});
