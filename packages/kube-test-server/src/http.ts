import type { IncomingMessage, ServerResponse } from "node:http";
import { entityTooLarge } from "./errors.js";

/** kube-apiserver's limit on request bodies (3 MiB). */
export const MAX_REQUEST_BODY_BYTES = 3 * 1024 * 1024;

/** The body as text; past `limit` the rest is drained and the request refused with 413. */
export function readBody(request: IncomingMessage, limit = MAX_REQUEST_BODY_BYTES): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) chunks.push(chunk);
    });
    request.on("end", () => (size > limit ? reject(entityTooLarge(`limit is ${limit}`)) : resolve(Buffer.concat(chunks).toString("utf8"))));
    request.on("error", reject);
  });
}

export function sendJson(response: ServerResponse, code: number, body: unknown, warnings: readonly string[] = []): void {
  const text = JSON.stringify(body);
  const headers: Record<string, string | string[]> = {
    "Content-Type": "application/json",
    "Content-Length": String(Buffer.byteLength(text)),
    "Cache-Control": "no-cache, private",
  };
  if (warnings.length > 0) headers.Warning = warnings.map((w) => `299 - ${JSON.stringify(w)}`);
  response.writeHead(code, headers);
  response.end(text);
}

export function sendText(response: ServerResponse, code: number, text: string): void {
  response.writeHead(code, { "Content-Type": "text/plain; charset=utf-8", "Content-Length": String(Buffer.byteLength(text)) });
  response.end(text);
}
