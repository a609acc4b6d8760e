import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import type { TLSSocket } from "node:tls";
import { type EtcdInstance, makeTestCertificates, startEtcd } from "@ipamkit/etcd-launcher";
import { type KubeTestServer, startKubeTestServer } from "@ipamkit/kube-test-server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { onNode, useNode } from "../../cni-plugin/test/node-files.js";
import { scratchDir, Tally } from "../test/campaign.js";
import { runBinary } from "../test/subprocess.js";

// The TLS part of the security review (RELIABILITY.md): the TLS settings a config gives are
// honoured by the built binary — with the right CA and client certificate it works; with another
// CA, without the client certificate, or without TLS settings against a TLS-only server it fails
// (never silently falls back to trusting anyone); a TLS file that cannot be read is a config error.

const dir = scratchDir("tls");
useNode(scratchDir("tls-node"));
const tally = new Tally();
const certs = (name: string) => {
  const at = `${dir}/${name}`;
  mkdirSync(at);
  return makeTestCertificates(at);
};
const good = certs("good");
const other = certs("other");

const env = { CNI_COMMAND: "ADD", CNI_CONTAINERID: "t1", CNI_IFNAME: "net1", CNI_NETNS: "/var/run/netns/x", CNI_PATH: "/opt/cni/bin" };
let n = 0;
async function add(what: string, ipam: Record<string, unknown>): Promise<number | undefined> {
  const conf = {
    cniVersion: "1.1.0",
    name: `tls-${n++}`,
    // the credentials are node-level keys (issue 47): written to the node's flat file for this call
    ipam: onNode({ type: "ipamkit", range: "10.66.0.0/24", ...ipam }),
  };
  const r = await runBinary(env, Buffer.from(JSON.stringify(conf)), { boundMs: 60_000 });
  const answer = r.exitCode === 0 ? 0 : (JSON.parse(r.stdout) as { code: number }).code;
  tally.add(`${what}:${answer}`);
  return answer;
}

afterAll(() => console.log(`tls: ${tally}`));

describe("etcd over mutual TLS, through the binary's etcd_* keys", () => {
  let etcd: EtcdInstance;
  beforeAll(async () => {
    etcd = await startEtcd({ tls: good });
  });
  afterAll(async () => {
    await etcd?.stop();
  });
  const host = () => etcd.endpoint.replace("https://", "");

  it("the right CA and client certificate work, with or without a scheme in etcd_host", async () => {
    const files = { etcd_ca_cert_file: good.ca, etcd_cert_file: good.clientCert, etcd_key_file: good.clientKey };
    expect(await add("etcd right CA + client cert", { etcd_host: host(), ...files })).toBe(0);
    expect(await add("etcd right CA + client cert (https://)", { etcd_host: etcd.endpoint, ...files })).toBe(0);
    // an http:// host with TLS files still speaks TLS: the files are never silently dropped
    expect(await add("etcd right CA + client cert (http://)", { etcd_host: etcd.endpoint.replace("https", "http"), ...files })).toBe(0);
  });

  it("another CA, no client certificate, or no TLS settings: refused (11), never a plain-text or unverified fallback", async () => {
    expect(
      await add("etcd other CA", {
        etcd_host: host(),
        etcd_ca_cert_file: other.ca,
        etcd_cert_file: good.clientCert,
        etcd_key_file: good.clientKey,
      }),
    ).toBe(11);
    expect(
      await add("etcd a client cert of another CA", {
        etcd_host: host(),
        etcd_ca_cert_file: good.ca,
        etcd_cert_file: other.clientCert,
        etcd_key_file: other.clientKey,
      }),
    ).toBe(11);
    expect(await add("etcd no client cert", { etcd_host: host(), etcd_ca_cert_file: good.ca })).toBe(11);
    expect(await add("etcd no TLS settings", { etcd_host: host() })).toBe(11);
  });

  it("a TLS file that cannot be read is a config error naming it (7)", async () => {
    expect(await add("etcd missing CA file", { etcd_host: host(), etcd_ca_cert_file: `${dir}/missing-ca.pem` })).toBe(7);
  });
});

describe("the Kubernetes store over TLS with a client certificate, through the kubeconfig", () => {
  let kube: KubeTestServer;
  let proxy: Server;
  let url = "";
  const clients: string[] = [];
  beforeAll(async () => {
    kube = await startKubeTestServer({ port: 0 });
    const target = new URL(kube.url);
    // a TLS front for the test API server that requires a client certificate of the good CA
    proxy = createServer(
      {
        key: readFileSync(good.key),
        cert: readFileSync(good.cert),
        ca: readFileSync(good.ca),
        requestCert: true,
        rejectUnauthorized: true,
      },
      (req, res) => {
        clients.push(String((req.socket as TLSSocket).getPeerCertificate().subject?.CN));
        const forward = httpRequest(
          { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers },
          (answer) => {
            res.writeHead(answer.statusCode ?? 502, answer.headers);
            answer.pipe(res);
          },
        );
        req.pipe(forward);
      },
    );
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
    url = `https://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    proxy?.closeAllConnections();
    await new Promise((r) => proxy?.close(r));
    await kube?.close();
  });

  const kubeconfig = (name: string, cluster: Record<string, unknown>, user: Record<string, unknown>) => {
    const path = `${dir}/${name}.kubeconfig`;
    writeFileSync(
      path,
      JSON.stringify({
        apiVersion: "v1",
        kind: "Config",
        clusters: [{ name: "c", cluster: { server: url, ...cluster } }],
        users: [{ name: "u", user }],
        contexts: [{ name: "x", context: { cluster: "c", user: "u", namespace: "ipam" } }],
        "current-context": "x",
      }),
      { mode: 0o600 },
    );
    return { kubernetes: { kubeconfig: path } };
  };
  const clientCert = { "client-certificate": good.clientCert, "client-key": good.clientKey };
  const b64 = (path: string) => readFileSync(path).toString("base64");

  it("the right CA (file or inline) and the client certificate work; the server saw the certificate", async () => {
    expect(await add("kube CA file + client cert", kubeconfig("ca-file", { "certificate-authority": good.ca }, clientCert))).toBe(0);
    expect(
      await add(
        "kube inline CA + inline client cert",
        kubeconfig(
          "ca-data",
          { "certificate-authority-data": b64(good.ca) },
          { "client-certificate-data": b64(good.clientCert), "client-key-data": b64(good.clientKey) },
        ),
      ),
    ).toBe(0);
    expect(clients.length).toBeGreaterThan(0);
    expect(new Set(clients)).toEqual(new Set(["client"]));
  });

  it("a CA or client certificate file that cannot be read: the call fails with a CNI error, never unverified", async () => {
    const missing = `${dir}/missing.pem`;
    const seen = clients.length;
    const a = await add("kube missing CA file", kubeconfig("missing-ca", { "certificate-authority": missing }, clientCert));
    const b = await add(
      "kube missing client cert file",
      kubeconfig("missing-cert", { "certificate-authority": good.ca }, { "client-certificate": missing, "client-key": good.clientKey }),
    );
    expect([a, b].every((code) => code !== 0 && code !== 999)).toBe(true);
    expect(clients.length).toBe(seen);
  });

  it("insecure-skip-tls-verify is honoured as written (it works against a CA the client does not know)", async () => {
    expect(await add("kube skip-verify + client cert", kubeconfig("skip", { "insecure-skip-tls-verify": true }, clientCert))).toBe(0);
  });

  it("another CA, or no client certificate: refused (11), never an unverified fallback", async () => {
    const seen = clients.length;
    expect(await add("kube other CA", kubeconfig("other-ca", { "certificate-authority": other.ca }, clientCert))).toBe(11);
    expect(await add("kube no CA (system roots)", kubeconfig("no-ca", {}, clientCert))).toBe(11);
    expect(await add("kube no client cert", kubeconfig("no-client", { "certificate-authority": good.ca }, {}))).toBe(11);
    expect(clients.length).toBe(seen);
  });
});
