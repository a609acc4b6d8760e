import http2 from "node:http2";
import type { Socket } from "node:net";

export interface GrpcResetProxy {
  /** `http://127.0.0.1:<port>`, plaintext gRPC (h2c) like the etcd behind it. */
  readonly endpoint: string;
  /** Write transactions seen so far (a KV/Txn with compares: every store write is one). */
  readonly writes: number;
  /** The gRPC status of each answer swallowed ("0": etcd applied it). */
  readonly swallowed: string[];
  /** Which write transaction (1-based) to reset after etcd answered it (default: none). */
  resetWrite: number | undefined;
  close(): Promise<void>;
}

const TXN = "/etcdserverpb.KV/Txn";
/** gRPC frames a message as 1 flag byte and 4 length bytes; a TxnRequest with compares starts with field 1 (0x0a). */
const isWriteTxn = (path: string | undefined, body: Buffer) => path === TXN && body.length > 5 && body[5] === 0x0a;

/** One connection to etcd per client connection (made on its first call, remade if it ended), closed with it. */
function upstreamsTo(etcdEndpoint: string): (session: http2.ServerHttp2Session) => http2.ClientHttp2Session {
  const upstreams = new WeakMap<http2.ServerHttp2Session, http2.ClientHttp2Session>();
  return (session) => {
    let upstream = upstreams.get(session);
    if (upstream === undefined || upstream.destroyed || upstream.closed) {
      const created = http2.connect(etcdEndpoint);
      created.on("error", () => undefined);
      session.once("close", () => created.close());
      upstreams.set(session, created);
      upstream = created;
    }
    return upstream;
  };
}

/**
 * An HTTP/2 proxy (node:http2, over TCP sockets it keeps hold of) in front of a real etcd, for
 * tests: each gRPC call is forwarded as it is, answers and trailers back. For the write
 * transaction chosen by `resetWrite`, it waits until etcd has answered — the transaction is then
 * done — and, instead of passing the answer on, resets the client's TCP connection (RST): the
 * client cannot know whether it was applied.
 */
export async function startGrpcResetProxy(etcdEndpoint: string): Promise<GrpcResetProxy> {
  const sockets = new Set<Socket>();
  const upstreamOf = upstreamsTo(etcdEndpoint);
  const swallowed: string[] = [];
  let writes = 0;
  const server = http2.createServer();
  server.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  const proxy: GrpcResetProxy = {
    endpoint: "",
    get writes() {
      return writes;
    },
    swallowed,
    resetWrite: undefined,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  server.on("stream", (stream, headers) => {
    const { ":path": path, ":method": method, ":authority": authority, ...rest } = headers;
    const out = upstreamOf(stream.session as http2.ServerHttp2Session).request(
      { ":path": path, ":method": method, ":authority": authority, ...rest },
      { endStream: false },
    );
    const body: Buffer[] = [];
    let swallow = false;
    let trailers: http2.IncomingHttpHeaders = {};
    stream.on("data", (chunk: Buffer) => {
      body.push(chunk);
      out.write(chunk);
    });
    stream.on("end", () => {
      if (isWriteTxn(path, Buffer.concat(body)) && ++writes === proxy.resetWrite) swallow = true;
      out.end();
    });
    stream.on("error", () => out.close());
    out.on("error", () => stream.close());
    out.on("response", (answer) => {
      if (swallow) return;
      const { ":status": status, ...fields } = answer;
      stream.respond({ ":status": status ?? 200, ...fields }, { waitForTrailers: true });
    });
    out.on("data", (chunk: Buffer) => {
      if (!swallow) stream.write(chunk);
    });
    out.on("trailers", (received) => {
      trailers = received;
    });
    stream.on("wantTrailers", () => stream.sendTrailers(trailers));
    out.on("end", () => {
      if (!swallow) {
        stream.end();
        return;
      }
      // etcd has answered (applied, or refused): the client never hears of it
      swallowed.push(String(trailers["grpc-status"] ?? "?"));
      const session = stream.session?.socket as unknown as { remotePort?: number } | undefined;
      for (const socket of sockets) if (socket.remotePort === session?.remotePort) socket.resetAndDestroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("grpc reset proxy: no port");
  return Object.assign(proxy, { endpoint: `http://127.0.0.1:${address.port}` });
}
