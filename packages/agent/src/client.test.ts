import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { AgentUnavailableError, forwardToAgent } from "./client.js";
import { cniEnvOf } from "./protocol.js";

let dir: string;
let server: Server | undefined;
const open = new Set<Socket>();
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "ipamkit-client-"));
});
afterEach(async () => {
  for (const socket of open) socket.destroy();
  await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
  server = undefined;
  rmSync(dir, { recursive: true, force: true });
});

/** A fake agent that answers every request with `reply` (test of the client only). */
async function fake(reply: (request: string) => string | undefined): Promise<string> {
  const path = join(dir, "fake.sock");
  server = createServer({ allowHalfOpen: true }, (socket) => {
    let text = "";
    socket.on("data", (d) => (text += d));
    socket.on("end", () => {
      const answer = reply(text);
      if (answer === undefined) socket.destroy();
      else socket.end(answer);
    });
  });
  await new Promise<void>((r) => server?.listen(path, r));
  return path;
}

const call = (socketPath: string, timeoutMs?: number) =>
  forwardToAgent({
    socketPath,
    env: { CNI_COMMAND: "ADD", HOME: "/root" },
    stdin: "{}",
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
  });

it("sends only CNI_* variables and returns the answer", async () => {
  let seen: unknown;
  const path = await fake((request) => {
    seen = JSON.parse(request);
    return '{"v":1,"exitCode":0,"stdout":"{}\\n","stderr":""}\n';
  });
  const before = Date.now();
  expect(await call(path)).toEqual({ v: 1, exitCode: 0, stdout: "{}\n", stderr: "" });
  // and the call's deadline: 25 s from now by default
  expect(seen).toEqual({ v: 1, env: { CNI_COMMAND: "ADD" }, stdin: "{}", deadline: expect.any(Number) });
  const { deadline } = seen as { deadline: number };
  expect(deadline).toBeGreaterThanOrEqual(before + 25_000);
  expect(deadline).toBeLessThanOrEqual(Date.now() + 25_000);
  expect(cniEnvOf({ CNI_A: "1", CNI_B: undefined, X: "2" })).toEqual({ CNI_A: "1" });
});

it("nothing listening is 'unreachable'; a bad or missing answer is 'failed'; a silent agent times out", async () => {
  await expect(call(join(dir, "absent.sock"))).rejects.toMatchObject({ name: "AgentUnavailableError", kind: "unreachable" });
  let reply: string | undefined;
  const path = await fake(() => reply);
  for (const bad of [undefined, "", "garbage", '{"v":1,"exitCode":"0"}']) {
    reply = bad;
    const error = await call(path).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AgentUnavailableError);
    expect(error).toMatchObject({ kind: "failed" });
  }
  await new Promise<void>((r) => server?.close(() => r()));
  const silentPath = join(dir, "silent.sock");
  server = createServer({ allowHalfOpen: true }, (socket) => void open.add(socket));
  await new Promise<void>((r) => server?.listen(silentPath, r));
  await expect(call(silentPath, 300)).rejects.toMatchObject({ kind: "timeout", message: expect.stringContaining("timed out") });
});
