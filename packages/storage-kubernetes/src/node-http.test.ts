import { once } from "node:events";
import http, { type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { StoreUnavailableError } from "@ipamkit/core";
import { HttpMethod, RequestContext } from "@kubernetes/client-node";
import { afterEach, expect, it } from "vitest";
import { mapKubeError } from "./errors.js";
import { NodeHttpLibrary } from "./node-http.js";

const servers: Server[] = [];
const agents: http.Agent[] = [];
afterEach(() => {
  for (const server of servers.splice(0)) server.close();
  for (const agent of agents.splice(0)) agent.destroy();
});

async function serve(handler: (request: IncomingMessage, body: string, response: ServerResponse) => void): Promise<string> {
  const server = http.createServer((request, response) => {
    let body = "";
    request.setEncoding("utf8");
    request.on("data", (chunk: string) => {
      body += chunk;
    });
    request.on("end", () => handler(request, body, response));
  });
  servers.push(server);
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
}

function request(url: string, method: HttpMethod, options: { body?: string; agent?: http.Agent } = {}): RequestContext {
  const context = new RequestContext(url, method);
  context.setHeaderParam("Content-Type", "application/json");
  if (options.body !== undefined) context.setBody(options.body);
  if (options.agent !== undefined) context.setAgent(options.agent);
  return context;
}

const keepAlive = () => {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  agents.push(agent);
  return agent;
};

it("sends a DELETE's body sized, and the kept-alive connection then serves the next request", async () => {
  const seen: { method: string | undefined; body: string; length: string | undefined; port: number | undefined }[] = [];
  const url = await serve((request, body, response) => {
    seen.push({ method: request.method, body, length: request.headers["content-length"], port: request.socket.remotePort });
    response.end("{}");
  });
  const library = new NodeHttpLibrary({ timeoutMs: 5_000 });
  const agent = keepAlive();
  const preconditions = JSON.stringify({ preconditions: { resourceVersion: "7" } });
  const deleted = await library.send(request(`${url}/x`, HttpMethod.DELETE, { body: preconditions, agent })).toPromise();
  const read = await library.send(request(`${url}/y`, HttpMethod.GET, { agent })).toPromise();
  expect([deleted.httpStatusCode, read.httpStatusCode]).toEqual([200, 200]);
  expect(seen.map(({ method, body, length }) => ({ method, body, length }))).toEqual([
    { method: "DELETE", body: preconditions, length: String(preconditions.length) },
    { method: "GET", body: "", length: undefined },
  ]);
  expect(seen[1]?.port).toBe(seen[0]?.port);
});

it("gives an answer sent in pieces whole, as text and as bytes, with its status and headers (repeated ones joined)", async () => {
  const text = `{"items":[${Array.from({ length: 2_000 }, (_, i) => `"é${i}"`).join(",")}]}`;
  const url = await serve((_request, _body, response) => {
    response.writeHead(409, { "Content-Type": "application/json", "X-Seen": ["a", "b"] });
    const bytes = Buffer.from(text);
    // split inside a two-byte character: the text is decoded from the whole answer, not piece by piece
    const cut = bytes.indexOf(Buffer.from("é")) + 1;
    response.write(bytes.subarray(0, cut));
    setTimeout(() => response.end(bytes.subarray(cut)), 20);
  });
  const answer = await new NodeHttpLibrary({ timeoutMs: 5_000 }).send(request(`${url}/z`, HttpMethod.GET)).toPromise();
  expect(answer.httpStatusCode).toBe(409);
  expect(answer.headers["content-type"]).toBe("application/json");
  expect(answer.headers["x-seen"]).toBe("a, b");
  expect(await answer.body.text()).toBe(text);
  expect((await answer.body.binary()).equals(Buffer.from(text))).toBe(true);
});

it("fails a request at its deadline, whether no answer comes or it stops halfway, as a retryable error", async () => {
  const url = await serve((request, _body, response) => {
    if (request.url === "/half") {
      response.writeHead(200, { "Content-Type": "application/json", "Content-Length": "100" });
      response.write('{"items":[');
    }
    // otherwise: never answers
  });
  const library = new NodeHttpLibrary({ timeoutMs: 150 });
  for (const path of ["/silent", "/half"]) {
    const started = performance.now();
    const error = await library
      .send(request(`${url}${path}`, HttpMethod.GET))
      .toPromise()
      .catch((e: unknown) => e);
    expect(performance.now() - started).toBeGreaterThanOrEqual(140);
    expect(error).toMatchObject({ name: "TimeoutError", code: "ETIMEDOUT", message: "no answer within 150 ms" });
    const mapped = mapKubeError(error, "get", `IPPool x${path}`);
    expect(mapped).toBeInstanceOf(StoreUnavailableError);
    expect(mapped.message).toContain("TimeoutError: no answer within 150 ms");
  }
});

it("rejects with Node's own error when nothing listens, which the store reports as unavailable", async () => {
  const url = await serve((_request, _body, response) => response.end());
  const server = servers.pop() as Server;
  await new Promise((resolve) => server.close(resolve));
  const error = await new NodeHttpLibrary({ timeoutMs: 5_000 })
    .send(request(`${url}/x`, HttpMethod.GET))
    .toPromise()
    .catch((e: unknown) => e);
  expect(error).toMatchObject({ code: "ECONNREFUSED" });
  expect(mapKubeError(error, "get", "IPPool x/y")).toBeInstanceOf(StoreUnavailableError);
});
