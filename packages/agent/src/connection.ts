import type { Socket } from "node:net";
import { CNI_CODES, CniError, errorJson } from "@ipamkit/cni";
import type { AgentStats } from "./agent-types.js";
import { type CallContext, runCall } from "./call.js";
import { expiredAnswer, pastDeadline } from "./deadline.js";
import { type AgentRequest, type AgentResponse, MAX_REQUEST_BYTES, PROTOCOL_VERSION, rawFrame, requestProblem } from "./protocol.js";

/** An agent's connections: what a connection reports to, and what close() waits for. */
export interface Connections extends CallContext {
  snapshot: () => AgentStats;
  readonly closing: boolean;
  all: Set<Socket>;
  /** Connections whose call runs: close() waits for them; every other one is closed at once. */
  working: Set<Socket>;
  inFlight: Set<Promise<void>>;
}

function malformed(ctx: Connections, reason: string): AgentResponse {
  ctx.stats.malformed++;
  ctx.logger.warn({ reason }, "malformed request");
  const error = new CniError(CNI_CODES.DECODE_FAILURE, `ipamkit agent: malformed request: ${reason}`);
  return { v: PROTOCOL_VERSION, exitCode: 1, stdout: errorJson(error, "1.1.0"), stderr: "" };
}

/** The answer to one whole request. `raw` is set when it asked for the raw frame. */
async function answerRequest(ctx: Connections, text: string, frame: { raw: boolean }): Promise<AgentResponse> {
  let request: unknown;
  try {
    request = JSON.parse(text);
  } catch {
    return malformed(ctx, "not JSON");
  }
  const problem = requestProblem(request);
  if (problem !== undefined) return malformed(ctx, problem);
  if ((request as { op?: string }).op === "stats") {
    return { v: PROTOCOL_VERSION, exitCode: 0, stdout: JSON.stringify(ctx.snapshot()), stderr: "" };
  }
  const { env, stdin, deadline } = request as AgentRequest;
  // the binary decided that this call is the agent's (forwarder.c): it is served, not routed again
  if ((request as AgentRequest).frame === "raw") {
    frame.raw = true;
    ctx.stats.raw++;
  }
  ctx.stats.requests++;
  const started = performance.now();
  const told = (response: AgentResponse) => {
    ctx.options.onCall?.({ command: env.CNI_COMMAND ?? "", response, seconds: (performance.now() - started) / 1000 });
    return response;
  };
  if (pastDeadline(deadline)) {
    // read only now: the agent was stopped (SIGSTOP) or overloaded while the caller waited
    ctx.stats.expired++;
    ctx.logger.warn({ command: env.CNI_COMMAND, containerId: env.CNI_CONTAINERID }, "call past its deadline: not performed");
    return told(expiredAnswer(stdin, deadline));
  }
  ctx.stats.inFlight++;
  try {
    const run = () => runCall(ctx, { ...env }, stdin, deadline);
    // an ADD or DEL runs under its attachment's journal lock (journal.ts: a replay never undoes it)
    return told(await (ctx.journal === undefined ? run() : ctx.journal.around(env, stdin, run)));
  } catch (error) {
    // dispatch answers every error itself; this is a bug, reported as one
    ctx.logger.error({ err: error }, "unexpected failure");
    const internal = new CniError(CNI_CODES.INTERNAL, "ipamkit agent: internal error");
    return { v: PROTOCOL_VERSION, exitCode: 1, stdout: errorJson(internal, "1.1.0"), stderr: "" };
  } finally {
    ctx.stats.inFlight--;
  }
}

/** Serves one connection: one request (newline-ended, or ended by the client's half-close), one answer. */
export function serveConnection(ctx: Connections, socket: Socket): void {
  let text = "";
  let done = false;
  const frame = { raw: false };
  socket.setEncoding("utf8");
  const respond = (response: AgentResponse) => {
    if (done) return;
    done = true;
    socket.end(frame.raw ? rawFrame(response) : `${JSON.stringify(response)}\n`);
  };
  const start = () => {
    if (done) return;
    socket.setTimeout(0);
    ctx.working.add(socket);
    const task = answerRequest(ctx, text, frame).then(respond);
    ctx.inFlight.add(task);
    void task.finally(() => {
      ctx.inFlight.delete(task);
      ctx.working.delete(socket);
    });
  };
  if (ctx.closing) return void socket.destroy();
  ctx.all.add(socket);
  socket.on("close", () => ctx.all.delete(socket));
  // a client that connects and sends nothing (or not all) must not hold a connection forever
  socket.setTimeout(ctx.options.idleTimeoutMs ?? 10_000, () => {
    if (ctx.working.has(socket) || done) return;
    ctx.stats.idleClosed++;
    ctx.logger.debug("idle connection closed");
    socket.destroy();
  });
  socket.on("data", (chunk: string) => {
    if (done) return;
    text += chunk;
    if (text.length > MAX_REQUEST_BYTES) respond(malformed(ctx, `larger than ${MAX_REQUEST_BYTES} bytes`));
    else if (text.endsWith("\n")) start();
  });
  socket.on("end", () => {
    if (!text.endsWith("\n")) start();
  });
  socket.on("error", (error) => ctx.logger.debug({ err: error }, "client connection error"));
}
