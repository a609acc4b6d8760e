import { InvalidKeyError } from "./errors.js";

/**
 * The attachment key: one CNI attachment is (containerID, ifName). Releases match this exact pair,
 * never a pod name and never a position. Built and parsed only here.
 */
export interface AttachmentKey {
  readonly containerId: string;
  /** CNI interface name. Empty only for legacy Whereabouts entries written before ifname existed (unknown, not a wildcard). */
  readonly ifName: string;
}

const CONTAINER_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;
const IF_NAME = /^[^\s/:]{1,15}$/;

/** Validates and builds an attachment key. `allowLegacy` permits an empty ifName (pre-v0.8 Whereabouts entries). */
export function attachmentKey(input: { containerId: string; ifName: string }, options: { allowLegacy?: boolean } = {}): AttachmentKey {
  const { containerId, ifName } = input;
  if (typeof containerId !== "string" || !CONTAINER_ID.test(containerId)) {
    throw new InvalidKeyError(String(containerId), "containerId must be non-empty: letters, digits, '_', '.', '-'");
  }
  if (ifName === "" && options.allowLegacy === true) return Object.freeze({ containerId, ifName });
  if (typeof ifName !== "string" || !IF_NAME.test(ifName) || ifName === "." || ifName === "..") {
    throw new InvalidKeyError(`${containerId}/${String(ifName)}`, "ifName must be 1-15 characters without '/', ':' or whitespace");
  }
  return Object.freeze({ containerId, ifName });
}

/** The one text form of a key: `containerId/ifName`. */
export function formatKey(key: AttachmentKey): string {
  return `${key.containerId}/${key.ifName}`;
}

/** Parses the text form produced by {@link formatKey}. No prefix matching, no ID-only fallback. */
export function parseKey(text: string): AttachmentKey {
  const slash = text.indexOf("/");
  if (slash < 0 || text.indexOf("/", slash + 1) >= 0) throw new InvalidKeyError(text, "expected containerId/ifName");
  return attachmentKey({ containerId: text.slice(0, slash), ifName: text.slice(slash + 1) }, { allowLegacy: true });
}

/** True for a legacy Whereabouts entry's key (no ifName: one attachment of its container, interface unknown). */
export function isLegacyKey(key: AttachmentKey): boolean {
  return key.ifName === "";
}

export function sameKey(a: AttachmentKey, b: AttachmentKey): boolean {
  return a.containerId === b.containerId && a.ifName === b.ifName;
}
