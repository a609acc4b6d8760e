import { CNI_CODES, CniError, errorAnswer, type IpamConfig } from "@ipamkit/cni";
import { type AgentResponse, PROTOCOL_VERSION } from "./protocol.js";

// The caller's deadline (AgentRequest.deadline): a call whose caller stopped waiting is not
// performed, and an ADD that finished too late to be heard is undone.

/**
 * An ADD answered later than this before the deadline may not reach its caller in time: it is
 * undone instead (the caller reports a failure, so the runtime does not count on the address).
 */
export const UNDO_MARGIN_MS = 250;

export function pastDeadline(deadline: number | undefined, marginMs = 0): boolean {
  return deadline !== undefined && Date.now() > deadline - marginMs;
}

/** A call's lock (`whereabouts_lease`) given up early enough for its failure to reach the caller. */
export function exclusiveUntil<E, P>(
  open: (config: IpamConfig, identity: string, deadline?: number, pool?: P) => E,
  deadline: number | undefined,
): (config: IpamConfig, identity: string, pool?: P) => E {
  return (config, identity, pool) => open(config, identity, deadline === undefined ? undefined : deadline - UNDO_MARGIN_MS, pool);
}

export function expiredError(deadline: number | undefined): CniError {
  const late = deadline === undefined ? 0 : Date.now() - deadline;
  return new CniError(
    CNI_CODES.TRY_AGAIN_LATER,
    `ipamkit agent: the caller stopped waiting ${late} ms ago (its deadline passed): the call was not performed`,
  );
}

export function expiredAnswer(stdin: string, deadline: number | undefined): AgentResponse {
  return { v: PROTOCOL_VERSION, exitCode: 1, stdout: errorAnswer(expiredError(deadline), stdin), stderr: "" };
}

export function lateAnswer(stdin: string, undone: boolean): AgentResponse {
  const error = new CniError(
    CNI_CODES.TRY_AGAIN_LATER,
    `ipamkit agent: the ADD finished past the caller's deadline and was ${undone ? "undone" : "not undone (its DEL failed; the runtime's DEL or the reconciler releases it)"}`,
  );
  return { v: PROTOCOL_VERSION, exitCode: 1, stdout: errorAnswer(error, stdin), stderr: "" };
}

/** Whether `work` settled within `ms` (it keeps running either way). */
export async function within(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([work.then(() => true), timedOut]);
  } finally {
    clearTimeout(timer);
  }
}
