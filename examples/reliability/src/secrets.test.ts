import { execFileSync, spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { type EtcdInstance, startEtcd } from "@ipamkit/etcd-launcher";
import { type KubeTestServer, startKubeTestServer } from "@ipamkit/kube-test-server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { nodeFlatFile, onNode, useNode } from "../../cni-plugin/test/node-files.js";
import { RECONCILER, scratchDir, Tally } from "../test/campaign.js";
import { type AgentProcess, runBinary, startAgent } from "../test/subprocess.js";

// The secrets part of the security review (RELIABILITY.md): failures are forced with an etcd
// password or a bearer token configured — wrong credentials, an unreachable store, a broken config,
// a corrupt pool, a kubeconfig that does not parse — through the built binary (direct and through
// the node-local agent, which logs at debug level) and the built reconciler, and every byte they
// print or log is searched for the secret.

const PASSWORD = "etcd-Pa55-SECRET-q7w8";
const TOKEN = "bearer-SECRET-token-z9x8";
const SERVER_TOKEN = "server-SECRET-token-k1j2";

const dir = scratchDir("secrets");
const tally = new Tally();
const outputs: { what: string; text: string }[] = [];

/** Keeps an output for the final search; `expectCode` checks the answer it should be. */
function record(what: string, text: string): void {
  outputs.push({ what, text });
  tally.add("outputs searched");
}

const env = (command: string, id = "s1") => ({
  CNI_COMMAND: command,
  CNI_CONTAINERID: id,
  CNI_IFNAME: "net1",
  CNI_NETNS: "/var/run/netns/x",
  CNI_PATH: "/opt/cni/bin",
});

async function plugin(
  what: string,
  command: string,
  conf: object,
): Promise<{ code: number | null; answer: { code?: number; msg?: string } }> {
  const r = await runBinary(env(command), Buffer.from(JSON.stringify(conf)), { boundMs: 60_000 });
  record(`${what} (${command}) stdout+stderr`, `${r.stdout}\n${r.stderr}`);
  let answer = {};
  try {
    answer = JSON.parse(r.stdout) as object;
  } catch {
    // no answer (DEL, STATUS succeed silently)
  }
  return { code: r.exitCode, answer };
}

function reconciler(what: string, args: string[], timeoutMs = 60_000): Promise<number | null> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [RECONCILER, "--log-level", "trace", ...args], {
      stdio: ["ignore", "pipe", "pipe"],
      env: { PATH: process.env.PATH ?? "" },
    });
    let text = "";
    child.stdout.on("data", (d) => {
      text += d;
    });
    child.stderr.on("data", (d) => {
      text += d;
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.on("close", (code) => {
      clearTimeout(timer);
      record(`reconciler ${what}`, text);
      resolve(code);
    });
  });
}

// the node's flat file: the store credentials and the agent's keys are node-level (issue 47), so
// each call's are written there (onNode, calls one at a time) and the rest is the network config
const nodeDir = join(dir, "node");
execFileSync("mkdir", ["-p", nodeDir]);
useNode(nodeDir);
const conf = (ipam: Record<string, unknown>, name = "secret-net") => ({
  cniVersion: "1.1.0",
  name,
  ipam: onNode({ type: "ipamkit", range: "10.65.0.0/24", ...ipam }),
});

let etcd: EtcdInstance;
let kube: KubeTestServer;
let agent: AgentProcess;
const file = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text, { mode: 0o600 });
  return path;
};

beforeAll(async () => {
  etcd = await startEtcd();
  const ctl = (...args: string[]) =>
    execFileSync("etcdctl", [`--endpoints=${etcd.endpoint}`, ...args], { stdio: "pipe", env: { ...process.env, ETCDCTL_API: "3" } });
  ctl("user", "add", "root:root-Pa55word");
  ctl("user", "add", `ipam:${PASSWORD}`);
  ctl("role", "add", "ipam");
  ctl("role", "grant-permission", "--prefix=true", "ipam", "readwrite", "/ipamkit/");
  ctl("user", "grant-role", "ipam", "ipam");
  ctl("auth", "enable");
  kube = await startKubeTestServer({ port: 0, token: SERVER_TOKEN });
  agent = await startAgent();
});
afterAll(async () => {
  await agent?.stop();
  record("agent log (debug)", agent?.log() ?? "");
  await kube?.close();
  await etcd?.stop();
});

describe("an etcd password is never printed or logged", () => {
  const host = () => etcd.endpoint;

  it("the right password works (the campaign's baseline)", async () => {
    const r = await plugin("etcd, right password", "ADD", conf({ etcd_host: host(), etcd_username: "ipam", etcd_password: PASSWORD }));
    expect(r.code).toBe(0);
  });

  for (const mode of ["direct", "agent"] as const) {
    const via = () => (mode === "agent" ? { agent_socket: agent.socketPath, agent_required: true } : {});
    it(`${mode}: a wrong password (103), an unreachable etcd (11, STATUS 50), a bad range (7), a password in the flat file`, async () => {
      const wrong = `wrong-${PASSWORD}`;
      expect(
        (await plugin(`${mode} wrong password`, "ADD", conf({ etcd_host: host(), etcd_username: "ipam", etcd_password: wrong, ...via() })))
          .answer.code,
      ).toBe(103);
      expect(
        (await plugin(`${mode} wrong password`, "DEL", conf({ etcd_host: host(), etcd_username: "ipam", etcd_password: wrong, ...via() })))
          .answer.code,
      ).toBe(103);
      const down = conf({ etcd_host: "127.0.0.1:1", etcd_username: "ipam", etcd_password: PASSWORD, ...via() });
      expect((await plugin(`${mode} unreachable`, "ADD", down)).answer.code).toBe(11);
      expect((await plugin(`${mode} unreachable`, "STATUS", down)).answer.code).toBe(50);
      const badRange = conf({ etcd_host: host(), etcd_password: PASSWORD, range: `10.0.0.0/${PASSWORD}`, ...via() });
      expect((await plugin(`${mode} bad range`, "ADD", badRange)).answer.code).toBe(7);
      // a misspelt key is ignored with a warning, as Whereabouts ignores it: the call goes without a
      // password, which this etcd refuses; neither the warning nor the error shows the value
      const typo = conf({ etcd_host: host(), etcd_pasword: PASSWORD, ...via() });
      const typoAnswer = await plugin(`${mode} misspelt key`, "ADD", typo);
      expect(typoAnswer.answer.code).not.toBe(0);
      // the password only in the node's flat file, which is invalid (range: 7)
      const flatOnly = conf({});
      nodeFlatFile(nodeDir, { etcd_host: "127.0.0.1:1", etcd_username: "ipam", etcd_password: PASSWORD, range: 7, ...via() });
      expect((await plugin(`${mode} flat file`, "ADD", flatOnly)).answer.code).toBe(7);
      tally.add("etcd failures forced", 7);
    });
  }

  it("an etcd_host with the password in the URL is refused (7) without echoing it", async () => {
    const r = await plugin("password in URL", "ADD", conf({ etcd_host: `http://ipam:${PASSWORD}@127.0.0.1:1` }));
    expect(r.answer.code).toBe(7);
    tally.add("etcd failures forced");
  });

  it("the reconciler: a wrong password and an unreachable etcd, read from --etcd-password-file", async () => {
    const kubeconfig = file("reconciler.kubeconfig", kube.kubeconfig());
    const wrong = file("wrong-password", `wrong-${PASSWORD}\n`);
    const right = file("password", `${PASSWORD}\n`);
    const base = ["--kubeconfig", kubeconfig, "--once", "--datastore", "etcd", "--etcd-username", "ipam"];
    expect(await reconciler("wrong password", [...base, "--etcd-endpoints", etcd.endpoint, "--etcd-password-file", wrong])).toBe(1);
    expect(await reconciler("unreachable", [...base, "--etcd-endpoints", "127.0.0.1:1", "--etcd-password-file", right])).toBe(1);
    tally.add("etcd failures forced", 2);
  });
});

describe("a bearer token is never printed or logged", () => {
  const kubeconfigWith = (name: string, token: string, url = kube.url) =>
    file(
      name,
      JSON.stringify({
        apiVersion: "v1",
        kind: "Config",
        clusters: [{ name: "c", cluster: { server: url, "insecure-skip-tls-verify": true } }],
        users: [{ name: "u", user: { token } }],
        contexts: [{ name: "x", context: { cluster: "c", user: "u", namespace: "ipam" } }],
        "current-context": "x",
      }),
    );
  const brokenKubeconfig = () =>
    file("broken.kubeconfig", `apiVersion: v1\nusers:\n- name: u\n  user:\n    token: ${TOKEN}\n  bad: [unclosed\ncontexts: []\n`);

  it("the server's own token works (the campaign's baseline)", async () => {
    const r = await plugin(
      "kube, right token",
      "ADD",
      conf({ kubernetes: { kubeconfig: kubeconfigWith("right.kubeconfig", SERVER_TOKEN) } }),
    );
    expect(r.code).toBe(0);
  });

  for (const mode of ["direct", "agent"] as const) {
    const via = () => (mode === "agent" ? { agent_socket: agent.socketPath, agent_required: true } : {});
    it(`${mode}: a refused token (103), an unreachable server (11), a kubeconfig that does not parse (7)`, async () => {
      const refused = kubeconfigWith(`refused-${mode}.kubeconfig`, TOKEN);
      expect((await plugin(`${mode} refused token`, "ADD", conf({ kubernetes: { kubeconfig: refused }, ...via() }))).answer.code).toBe(103);
      expect((await plugin(`${mode} refused token`, "DEL", conf({ kubernetes: { kubeconfig: refused }, ...via() }))).answer.code).toBe(103);
      const down = kubeconfigWith(`down-${mode}.kubeconfig`, TOKEN, "http://127.0.0.1:1");
      expect((await plugin(`${mode} unreachable`, "ADD", conf({ kubernetes: { kubeconfig: down }, ...via() }))).answer.code).toBe(11);
      expect(
        (await plugin(`${mode} unparsable kubeconfig`, "ADD", conf({ kubernetes: { kubeconfig: brokenKubeconfig() }, ...via() }))).answer
          .code,
      ).toBe(7);
      tally.add("token failures forced", 4);
    });
  }

  it("the reconciler: a refused token, an unreachable server, a kubeconfig that does not parse", async () => {
    expect(await reconciler("refused token", ["--kubeconfig", kubeconfigWith("r-refused.kubeconfig", TOKEN), "--once"])).toBe(1);
    expect(
      await reconciler("unreachable", ["--kubeconfig", kubeconfigWith("r-down.kubeconfig", TOKEN, "http://127.0.0.1:1"), "--once"]),
    ).toBe(1);
    expect(await reconciler("unparsable kubeconfig", ["--kubeconfig", brokenKubeconfig(), "--once"])).toBe(1);
    tally.add("token failures forced", 3);
  });
});

it("no output or log line holds a secret", async () => {
  // the agent's log is complete once it stopped
  await agent.stop();
  record("agent log (debug)", agent.log());
  const secrets = [PASSWORD, TOKEN, SERVER_TOKEN, "SECRET"];
  const leaks = outputs.flatMap((o) =>
    secrets.filter((s) => o.text.includes(s)).map((s) => `${o.what} holds ${s}: ${o.text.slice(0, 600)}`),
  );
  console.log(`secrets: ${tally}; ${outputs.reduce((n, o) => n + o.text.length, 0)} bytes searched; ${leaks.length} leaks`);
  expect(leaks).toEqual([]);
  // the searched outputs did carry the failures (not empty answers)
  expect(outputs.filter((o) => o.text.trim() !== "").length).toBeGreaterThan(20);
});
