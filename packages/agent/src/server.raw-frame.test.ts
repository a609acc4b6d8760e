import { rmSync } from "node:fs";
import { join } from "node:path";
import { createFileStore } from "@ipamkit/storage-file";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { forwardToAgent } from "./client.js";
import { confIn, env, makeAgentDir, nodeFs, rawCallTo } from "./server.fixtures.js";
import { type Agent, startAgent } from "./server.js";

// The native forwarder's raw frame; the JSON frame, per-node blocks and the socket's life are in server.test.ts.

let dir: string;
let socketPath: string;
let agent: Agent | undefined;

const conf = (ipam: Record<string, unknown> = {}) => confIn(dir, ipam);
const rawCall = (bytes: string) => rawCallTo(socketPath, bytes);

beforeEach(async () => {
  ({ dir, socketPath } = makeAgentDir());
  agent = await startAgent({ socketPath, openStore: async (config) => createFileStore({ dir: config.dataDir }), fs: nodeFs(dir) });
});
afterEach(async () => {
  await agent?.close();
  agent = undefined;
  rmSync(dir, { recursive: true, force: true });
});

describe("the agent", () => {
  describe("the raw frame (the native forwarder's)", () => {
    const rawRequest = (stdin: string, socket: string, command = "ADD", containerId = "r1") =>
      `${JSON.stringify({ v: 1, frame: "raw", socket, env: env(command, containerId), stdin })}\n`;
    /** Header fields and the two texts, cut by the header's byte counts. */
    const parseRaw = (answer: string) => {
      const bytes = Buffer.from(answer);
      const nl = bytes.indexOf(10);
      const [tag, code, outLen, errLen] = bytes.subarray(0, nl).toString().split(" ");
      const body = bytes.subarray(nl + 1);
      expect(tag).toBe("raw");
      expect(body.length).toBe(Number(outLen) + Number(errLen));
      return {
        exitCode: Number(code),
        stdout: body.subarray(0, Number(outLen)).toString(),
        stderr: body.subarray(Number(outLen)).toString(),
      };
    };

    it("answers the same call as the JSON frame would, lengths counted in UTF-8 bytes", async () => {
      // a multi-byte network name travels into the error message: byte and character counts differ
      const named = conf({ range: "10.30.0.0/33" }).replace('"name":"net"', '"name":"nét-ü"');
      const viaRaw = parseRaw(await rawCall(rawRequest(named, socketPath, "ADD", "e1")));
      const viaJson = await forwardToAgent({ socketPath, env: env("ADD", "e1"), stdin: named });
      expect(viaRaw).toEqual({ exitCode: viaJson.exitCode, stdout: viaJson.stdout, stderr: viaJson.stderr });
      expect(viaRaw.exitCode).toBe(1);
      expect(JSON.parse(viaRaw.stdout)).toMatchObject({ code: 7 });

      const added = parseRaw(await rawCall(rawRequest(conf(), socketPath)));
      expect(added.exitCode).toBe(0);
      expect(JSON.parse(added.stdout).ips).toEqual([{ address: "10.30.0.1/24" }]);
      expect(agent?.stats()).toMatchObject({ raw: 2, requests: 3 });
    });

    it("serves every call it is given, whatever agent_socket the config names: the binary decided the route", async () => {
      const elsewhere = join(dir, "other.sock");
      // no routing again here (before 2026-12-07 the agent re-read agent_socket and answered `fallback`)
      const served = [conf({ agent_socket: elsewhere }), conf()];
      for (const [i, stdin] of served.entries()) {
        const added = parseRaw(await rawCall(rawRequest(stdin, socketPath, "ADD", `s${i}`)));
        expect(JSON.parse(added.stdout).ips).toEqual([{ address: `10.30.0.${i + 1}/24` }]);
      }
      // a config that is not JSON is the plugin's to report, in CNI terms
      const broken = parseRaw(await rawCall(rawRequest("not json", socketPath)));
      expect(broken.exitCode).toBe(1);
      expect(JSON.parse(broken.stdout)).toMatchObject({ code: 6 });
      expect(agent?.stats()).toMatchObject({ raw: 3, requests: 3, malformed: 0 });
    });
  });
});
