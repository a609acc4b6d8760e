import { createServer, type Server } from "node:http";
import type { Registry } from "prom-client";

export interface MetricsServerOptions {
  /** `host:port` (`[::1]:9464`; `:9464` every interface; port 0 picks a free one). */
  address: string;
  registry: Registry;
  /** `/healthz` answers 200 while this is true, 503 otherwise (default: always). */
  healthy?: () => boolean;
}

export interface MetricsServer {
  /** `http://host:port` as bound. */
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

/** Splits `host:port`; throws a one-line Error naming the value when it is not one. */
export function parseListenAddress(text: string): { host: string; port: number } {
  const match = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(text.trim());
  const port = Number(match?.[3]);
  if (match === null || !(port >= 0 && port <= 65535)) {
    throw new Error(`${JSON.stringify(text)} is not host:port (e.g. 127.0.0.1:9464, [::1]:9464, :9464)`);
  }
  return { host: match[1] ?? match[2] ?? "", port };
}

/** HTTP `/metrics` (Prometheus text format) and `/healthz` on its own port; nothing else is served. */
export async function startMetricsServer(options: MetricsServerOptions): Promise<MetricsServer> {
  const { host, port } = parseListenAddress(options.address);
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? "").split("?")[0];
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405, { allow: "GET, HEAD" }).end();
    } else if (path === "/metrics") {
      options.registry.metrics().then(
        (text) => res.writeHead(200, { "content-type": options.registry.contentType }).end(text),
        (error: unknown) => res.writeHead(500, { "content-type": "text/plain" }).end(`metrics failed: ${(error as Error).message}\n`),
      );
    } else if (path === "/healthz") {
      const ok = options.healthy?.() ?? true;
      res.writeHead(ok ? 200 : 503, { "content-type": "text/plain" }).end(ok ? "ok\n" : "stopping\n");
    } else {
      res.writeHead(404, { "content-type": "text/plain" }).end("not found: /metrics and /healthz are served\n");
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host === "" ? undefined : host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const bound = server.address();
  const boundPort = typeof bound === "object" && bound !== null ? bound.port : port;
  const shown = host === "" ? "0.0.0.0" : host.includes(":") ? `[${host}]` : host;
  return {
    url: `http://${shown}:${boundPort}`,
    port: boundPort,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
