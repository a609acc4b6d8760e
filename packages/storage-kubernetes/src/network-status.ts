import { formatIp, type NetworkStatusEntry, parseIp } from "@ipamkit/core";

/** Multus' annotation; `networks-status` is its pre-1.0 spelling. */
export const NETWORK_STATUS = "k8s.v1.cni.cncf.io/network-status";
export const LEGACY_NETWORK_STATUS = "k8s.v1.cni.cncf.io/networks-status";

/** An address as Multus writes it ("10.0.0.5", sometimes "10.0.0.5/24") in canonical text; undefined if unreadable. */
function canonical(text: unknown): string | undefined {
  if (typeof text !== "string") return undefined;
  try {
    return formatIp(parseIp(text.split("/")[0] ?? ""));
  } catch {
    return undefined;
  }
}

/**
 * The network-status entries of a pod's annotations; undefined when there is no annotation or it is
 * not a JSON array (an unreadable annotation proves nothing, so it must not free an IP).
 */
export function parseNetworkStatus(annotations: Readonly<Record<string, string>> | undefined): NetworkStatusEntry[] | undefined {
  const text = annotations?.[NETWORK_STATUS] ?? annotations?.[LEGACY_NETWORK_STATUS];
  if (text === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!Array.isArray(parsed)) return undefined;
  return parsed
    .filter((e): e is Record<string, unknown> => typeof e === "object" && e !== null)
    .map((e) => ({
      ...(typeof e.name === "string" ? { name: e.name } : {}),
      ...(typeof e.interface === "string" ? { interface: e.interface } : {}),
      ips: Array.isArray(e.ips) ? e.ips.map(canonical).filter((ip): ip is string => ip !== undefined) : [],
      ...(typeof e.default === "boolean" ? { default: e.default } : {}),
    }));
}
