import http from "node:http";
import https from "node:https";
import { type HttpLibrary, Observable, type RequestContext, ResponseContext } from "@kubernetes/client-node";

/** What an answer's headers are to client-node: one string per name, repeated ones joined. */
function headersOf(message: http.IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(message.headers)) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(", ") : value;
  }
  return headers;
}

/** A request's deadline passed: mapKubeError makes it StoreUnavailableError (retryable). */
function deadlineError(timeoutMs: number): Error {
  return Object.assign(new Error(`no answer within ${timeoutMs} ms`), { name: "TimeoutError", code: "ETIMEDOUT" });
}

/**
 * client-node's HTTP library (its `httpApi` option) over Node's own http/https instead of the
 * node-fetch it bundles: the same request as client-node builds it — URL, method, headers and
 * authentication, body, agent (the keep-alive one, apiTransport) — and the same answer (status,
 * headers, body as text or bytes); client-node still serialises, checks the status and builds its
 * ApiException. node-fetch's Headers, Request and Response objects, its stream relay and an
 * AbortSignal per deadline cost the agents a fifth of their CPU per call (the store makes one
 * request per pool or claim it touches). Each request has a deadline of `timeoutMs` (a timer,
 * destroying the request when it fires, answer included). No redirects are followed and no
 * compression is asked for (the API server sends neither unasked). A failure rejects with Node's
 * own error (`code` ECONNRESET, ECONNREFUSED…; deadlineError), which mapKubeError makes
 * StoreUnavailableError.
 */
export class NodeHttpLibrary implements HttpLibrary {
  constructor(private readonly options: { timeoutMs: number }) {}

  send(request: RequestContext): Observable<ResponseContext> {
    const { timeoutMs } = this.options;
    return new Observable(
      new Promise<ResponseContext>((resolve, reject) => {
        const url = new URL(request.getUrl());
        const body = request.getBody() as string | Buffer | undefined;
        // a length for every body: Node sends a DELETE's body neither chunked nor sized otherwise
        const headers =
          body === undefined ? request.getHeaders() : { ...request.getHeaders(), "Content-Length": String(Buffer.byteLength(body)) };
        const options: http.RequestOptions = {
          method: request.getHttpMethod().toString(),
          headers,
          agent: request.getAgent() as http.Agent | undefined,
        };
        const sent = (url.protocol === "https:" ? https : http).request(url, options, (answer) => {
          const chunks: Buffer[] = [];
          answer.on("data", (chunk: Buffer) => chunks.push(chunk));
          answer.on("error", fail);
          answer.on("end", () => {
            clearTimeout(deadline);
            const bytes = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks);
            resolve(
              new ResponseContext(answer.statusCode ?? 0, headersOf(answer), {
                text: async () => bytes.toString("utf8"),
                binary: async () => bytes,
              }),
            );
          });
        });
        const deadline = setTimeout(() => sent.destroy(deadlineError(timeoutMs)), timeoutMs);
        function fail(error: Error) {
          clearTimeout(deadline);
          reject(error);
        }
        sent.on("error", fail);
        sent.end(body);
      }),
    );
  }
}
