/**
 * The deliberate differences from Whereabouts v0.9 in reading a network's IPAM config: each is a
 * config Whereabouts accepts that ipamkit answers otherwise, always in the user's favour. Rendered
 * into docs/configuration.md ("Differences from Whereabouts"); the corpus test
 * (examples/cni-plugin/src/whereabouts-corpus.test.ts) fails on any difference between the two
 * binaries not named here.
 */
export interface WhereaboutsDifference {
  /** Stable id, the anchor in docs/configuration.md (`#difference-<id>`). */
  id: string;
  /** What Whereabouts does. */
  whereabouts: string;
  /** What ipamkit does instead. */
  ipamkit: string;
  /** Why. */
  why: string;
}

export const WHEREABOUTS_DIFFERENCES: readonly WhereaboutsDifference[] = [
  {
    id: "gateway-reserved",
    whereabouts: "Hands the `gateway` address to a pod when it lies in the range (often the first pod).",
    ipamkit: "Never hands out a gateway that lies in the range; the next address goes to that pod.",
    why: "Two hosts with the gateway's address break the network for every pod on it (Whereabouts #139).",
  },
  {
    id: "gateway-family",
    whereabouts: "Attaches the one `gateway` to the addresses of both families in a dual-stack result.",
    ipamkit: "Attaches it only to addresses of its own family (`ipRanges[].gateway` sets one per range).",
    why: "An IPv4 gateway on an IPv6 address is no route; runtimes that read it fail.",
  },
  {
    id: "no-usable-address",
    whereabouts:
      "Accepts a range with no address to hand out (/31, /32, /127, /128, or everything excluded) and fails every ADD on it ('net mask is too short', 'Could not allocate IP').",
    ipamkit: "Refuses the config at load (code 7), naming the range and the nearest accepted form.",
    why: "The same outcome for every ADD, said once and clearly; nothing else changes.",
  },
  {
    id: "exclude-unreadable",
    whereabouts: "Accepts an `exclude` entry that is not a CIDR or an address, then fails every ADD ('could not parse exclude range').",
    ipamkit: "Refuses the config at load (code 7), naming the entry.",
    why: "The same outcome for every ADD, reported where the mistake is.",
  },
  {
    id: "network-name-label",
    whereabouts:
      "Accepts any `network_name`; one that is not a lowercase DNS-1123 label fragment (`Blue`, `tenant_a`) fails every ADD when the API server refuses the IPPool's name.",
    ipamkit: "Refuses it at load (code 7).",
    why: "The same outcome, said once and before any object is written.",
  },
  {
    id: "prefix-too-short",
    whereabouts: "Accepts ranges shorter than /8 (`0.0.0.0/0`, `::/0`).",
    ipamkit: "Refuses them at load (code 7).",
    why: "Such a range hands out loopback, multicast and reserved addresses with a default-route prefix.",
  },
  {
    id: "legacy-version-multi",
    whereabouts: "With cniVersion 0.1.0/0.2.0 and two ranges of one family, reserves both addresses and reports only the first.",
    ipamkit: "Refuses the config at load (code 7): a 0.2.0 result holds one address per family.",
    why: "An address reserved but never reported is held by a pod that does not know it.",
  },
  {
    id: "node-slice-bounds",
    whereabouts: "In a node's slice (`node_slice_size`), drops `exclude`, `range_start` and `range_end`: the whole slice is handed out.",
    ipamkit: "Keeps them: a slice hands out only the addresses the range does.",
    why: "An address excluded from a network stays excluded when the network moves to node slices.",
  },
  {
    id: "node-slice-one-range",
    whereabouts:
      "With `node_slice_size` and several ranges (`range` plus `ipRanges`), serves every range from the first range's slice: the same address twice in one result, or a failure for another family.",
    ipamkit: "Refuses the config at load (code 7): a network with node slices has one range.",
    why: "A result with one address twice, or an ADD that fails on every node, helps no one.",
  },
  {
    id: "node-slice-size",
    whereabouts:
      "Accepts a `node_slice_size` wider than the range (`/22` on a /24) or with no address to hand out (/31, /32); its node-slice controller cannot slice the range and every ADD fails ('no allocated node slice').",
    ipamkit: "Refuses the config at load (code 7), naming the sizes that work.",
    why: "The same outcome for every ADD, said once and clearly.",
  },
  {
    id: "flat-file-optional",
    whereabouts:
      "Fails every call when no flat file (`whereabouts.conf`) exists, even when the NAD says everything ('config file not found').",
    ipamkit: "Needs no flat file when the NAD's own keys are enough.",
    why: "An inline config is complete; nothing is gained by failing it.",
  },
];
