import { once } from "node:events";
import http from "node:http";
import type { Socket } from "node:net";
import { CustomObjectsApi, KubeConfig } from "@kubernetes/client-node";
import { afterEach, expect, it } from "vitest";
import { apiTransport, KEEP_ALIVE_IDLE_MS } from "./api.js";

const closers: (() => void)[] = [];
afterEach(() => {
  for (const close of closers.splice(0)) close();
});

/** An API server stand-in that keeps idle connections for a minute, and records each connection and who closed it. */
async function serve(): Promise<{ url: string; sockets: Socket[]; closed: Socket[] }> {
  const sockets: Socket[] = [];
  const closed: Socket[] = [];
  const server = http.createServer((_request, response) => {
    response.writeHead(200, { "Content-Type": "application/json" });
    response.end("{}");
  });
  server.keepAliveTimeout = 60_000;
  server.on("connection", (socket: Socket) => {
    sockets.push(socket);
    socket.on("close", () => closed.push(socket));
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  closers.push(() => server.close());
  closers.push(() => server.closeAllConnections());
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, sockets, closed };
}

function client(url: string): CustomObjectsApi {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromOptions({
    clusters: [{ name: "c", server: url, skipTLSVerify: true }],
    users: [{ name: "u" }],
    contexts: [{ name: "c", cluster: "c", user: "u" }],
    currentContext: "c",
  });
  return kubeConfig.makeApiClient(CustomObjectsApi);
}

const object = { group: "whereabouts.cni.cncf.io", version: "v1alpha1", namespace: "ns", plural: "ippools", name: "p" };

it("keeps a connection for the next request, and retires it once idle — before the server's idle timeout would", async () => {
  // kube-apiserver closes connections idle for 90 s (http.Server IdleTimeout); load balancers often at 60 s
  expect(KEEP_ALIVE_IDLE_MS).toBeLessThan(60_000);
  const server = await serve();
  const transport = apiTransport(5_000, { idleMs: 300 });
  closers.push(() => transport.close());
  const api = client(server.url);
  await api.getNamespacedCustomObject(object, transport);
  await api.getNamespacedCustomObject(object, transport);
  expect(server.sockets).toHaveLength(1); // kept alive between the two
  // idle now: the client closes it (the server would keep it for a minute)
  const [socket] = server.sockets;
  if (!server.closed.includes(socket as Socket)) {
    const bound = new Promise((_, reject) =>
      setTimeout(() => reject(new Error("the idle connection was not retired within 10 s")), 10_000),
    );
    await Promise.race([once(socket as Socket, "close"), bound]);
  }
  expect(server.closed).toEqual([socket]);
  // the next request goes out on a fresh connection, not on a retired one
  await api.getNamespacedCustomObject(object, transport);
  expect(server.sockets).toHaveLength(2);
});

it("does not retire a connection in use: a request slower than the idle time is answered", async () => {
  const sockets: Socket[] = [];
  const server = http.createServer((_request, response) => {
    setTimeout(() => {
      response.writeHead(200, { "Content-Type": "application/json" });
      response.end("{}");
    }, 600);
  });
  server.on("connection", (socket: Socket) => sockets.push(socket));
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  closers.push(
    () => server.close(),
    () => server.closeAllConnections(),
  );
  const transport = apiTransport(5_000, { idleMs: 200 });
  closers.push(() => transport.close());
  const api = client(`http://127.0.0.1:${(server.address() as { port: number }).port}`);
  await expect(api.getNamespacedCustomObject(object, transport)).resolves.toEqual({});
  expect(sockets).toHaveLength(1);
});
