import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import tls from "node:tls";
import { makeServingCertificates } from "@ipamkit/kube-apiserver-launcher";

/** One HTTP request as the proxy saw it go by. */
export interface SeenRequest {
  method: string;
  path: string;
  /** A write (POST, PUT, PATCH, DELETE). */
  write: boolean;
  /** 1-based among the writes; 0 for reads. */
  writeNumber: number;
}

export interface ResetProxy {
  /** `https://127.0.0.1:<port>`, serving a certificate signed by `ca`. */
  readonly url: string;
  readonly ca: string;
  readonly requests: SeenRequest[];
  /** The status lines of the answers swallowed: what the server did with each reset request. */
  readonly swallowed: string[];
  /** Which requests to reset after the server answered them (default: none). */
  resetWhen: (request: SeenRequest) => boolean;
  /** Connections accepted from clients so far. */
  readonly connections: number;
  close(): Promise<void>;
}

const WRITES = new Set(["POST", "PUT", "PATCH", "DELETE"]);

type Bytes = Buffer<ArrayBuffer>;

/** The first whole HTTP/1.1 request in `pending` (request line, headers, Content-Length body) and what follows it; undefined until it is all there. */
function takeRequest(pending: Bytes): { method: string; path: string; raw: Bytes; rest: Bytes } | undefined {
  const head = pending.indexOf("\r\n\r\n");
  if (head < 0) return undefined;
  const lines = pending.subarray(0, head).toString("latin1").split("\r\n");
  const [method = "", path = ""] = (lines[0] ?? "").split(" ");
  const lengthLine = lines.find((l) => l.toLowerCase().startsWith("content-length:"));
  const length = lengthLine === undefined ? 0 : Number(lengthLine.slice("content-length:".length).trim());
  if (pending.length < head + 4 + length) return undefined;
  return { method, path, raw: pending.subarray(0, head + 4 + length), rest: pending.subarray(head + 4 + length) };
}

/**
 * A TLS-terminating TCP proxy (node:tls) in front of a real API server, for tests: it reads each
 * HTTP/1.1 request the client sends (request line, headers, Content-Length body) and forwards it
 * unchanged. For a request chosen by `resetWhen`, it waits until the server starts its answer —
 * the server has then done what was asked — and instead of passing the answer on, resets the
 * client's connection (`resetAndDestroy`, a TCP RST): the client cannot know whether the request
 * was applied.
 */
export async function startResetProxy(upstream: { url: string; ca: string }): Promise<ResetProxy> {
  const dir = mkdtempSync(join(tmpdir(), "ipamkit-reset-proxy-"));
  const certs = makeServingCertificates(dir);
  const target = new URL(upstream.url);
  const requests: SeenRequest[] = [];
  const swallowed: string[] = [];
  let writes = 0;
  let connections = 0;
  const open = new Set<net.Socket>();
  const proxy: ResetProxy = {
    url: "",
    ca: readFileSync(certs.ca, "utf8"),
    requests,
    swallowed,
    resetWhen: () => false,
    get connections() {
      return connections;
    },
    async close() {
      for (const socket of open) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(dir, { recursive: true, force: true });
    },
  };

  const secureContext = tls.createSecureContext({ key: readFileSync(certs.key), cert: readFileSync(certs.cert) });
  // TLS over a plain TCP socket of our own: a TLS socket cannot send a RST, its TCP socket can
  const server = net.createServer((tcp) => {
    connections += 1;
    const client = new tls.TLSSocket(tcp, { isServer: true, secureContext });
    const up = tls.connect({ host: target.hostname, port: Number(target.port), ca: upstream.ca });
    open.add(client);
    open.add(up);
    let pending = Buffer.alloc(0);
    let swallow = false;
    const end = () => {
      client.destroy();
      up.destroy();
      open.delete(client);
      open.delete(up);
    };
    tcp.on("error", end);
    client.on("error", end);
    up.on("error", end);
    client.on("close", end);
    up.on("close", end);
    up.on("data", (chunk: Buffer) => {
      if (!swallow) {
        client.write(chunk);
        return;
      }
      // the server has answered (its status line is here): the write is done; the client never hears of it
      swallowed.push(chunk.toString("latin1").split("\r\n")[0] ?? "");
      tcp.resetAndDestroy();
      up.destroy();
    });
    client.on("data", (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      for (;;) {
        const next = takeRequest(pending);
        if (next === undefined) return;
        const { method, path, raw } = next;
        pending = next.rest;
        const write = WRITES.has(method);
        const seen: SeenRequest = { method, path, write, writeNumber: write ? ++writes : 0 };
        requests.push(seen);
        if (proxy.resetWhen(seen)) swallow = true;
        up.write(raw);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("reset proxy: no port");
  return Object.assign(proxy, { url: `https://127.0.0.1:${address.port}` });
}
