#!/bin/sh
# The static binary's ADD through the node-local agent (file store; and etcd when ETCD=host:port is
# given), side by side with a bare `node -e 0` start, in one hyperfine run (Debian: apt-get install
# hyperfine). Each measured ADD allocates afresh: the same attachment is DELeted before each run
# (--prepare, not timed). Run after `pnpm build`:  sh bench/add-vs-node.sh [runs, default 100]
# BENCH_JSON=1 also writes bench/results/add-vs-node.json (BENCH_JSON=path: there), with the commit.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-100}
command -v hyperfine >/dev/null || { echo "hyperfine is missing: apt-get install hyperfine" >&2; exit 1; }
[ -x "$here/dist/ipamkit" ] || { echo "no dist/ipamkit: run pnpm build first" >&2; exit 1; }
work=$(mktemp -d /dev/shm/ipamkit-bench-XXXXXX 2>/dev/null || mktemp -d)
mkdir -m 0700 "$work/run"
# the node's flat file: the agent's socket is a node-level key, read only from the file the node
# names (IPAMKIT_CONFIGURATION_PATH, for the binary and the agent alike), never from a network config
printf '{"agent_socket":"%s","agent_required":true}' "$work/run/agent.sock" >"$work/whereabouts.conf"
chmod 0644 "$work/whereabouts.conf"
export IPAMKIT_CONFIGURATION_PATH="$work"
"$here/dist/ipamkit-agent" --socket "$work/run/agent.sock" --log-level warn >"$work/agent.log" 2>&1 &
agent=$!
trap 'kill -TERM $agent 2>/dev/null; wait $agent 2>/dev/null; rm -rf "$work"' EXIT
while [ ! -S "$work/run/agent.sock" ]; do sleep 0.05; done
conf() { # $1: the store keys
  printf '{"cniVersion":"1.0.0","name":"bench","ipam":{"type":"ipamkit","range":"10.65.0.0/16",%s}}' "$1"
}
conf "\"data_dir\":\"$work/store\"" >"$work/file.json"
set -- --prepare true -n "node -e 0" "node -e 0"
set -- "$@" --prepare "CNI_COMMAND=DEL $here/dist/ipamkit <$work/file.json" -n "ipamkit ADD via agent (file)" "$here/dist/ipamkit <$work/file.json"
if [ -n "${ETCD:-}" ]; then
  conf "\"datastore\":\"etcd\",\"etcd_host\":\"$ETCD\"" >"$work/etcd.json"
  set -- "$@" --prepare "CNI_COMMAND=DEL $here/dist/ipamkit <$work/etcd.json" -n "ipamkit ADD via agent (etcd)" "$here/dist/ipamkit <$work/etcd.json"
fi
export CNI_COMMAND=ADD CNI_CONTAINERID=bench CNI_IFNAME=net1 CNI_NETNS=/x CNI_PATH=/opt/cni/bin
# one --prepare per command, in order (node -e 0 needs none: `true`)
hyperfine --runs "$runs" --warmup 5 --export-json "$work/hyperfine.json" "$@"
node -e 'for (const r of require(process.argv[1]).results) console.log(`${r.command}: median ${(r.median*1e3).toFixed(2)} ms, mean ${(r.mean*1e3).toFixed(2)} ± ${(r.stddev*1e3).toFixed(2)} ms, user ${(r.user*1e3).toFixed(2)} ms, system ${(r.system*1e3).toFixed(2)} ms`)' "$work/hyperfine.json"
if [ -n "${BENCH_JSON:-}" ]; then
  out=$BENCH_JSON
  [ "$out" = 1 ] && out="$here/../../bench/results/add-vs-node.json"
  commit=$(git -C "$here" rev-parse --short=12 HEAD)
  dirty=false
  [ -n "$(git -C "$here" status --porcelain --untracked-files=no)" ] && dirty=true
  node -e '
const [file, out, commit, dirty, runs, etcd] = process.argv.slice(1);
const results = require(file).results.map((r) => ({ command: r.command, medianMs: r.median * 1e3, meanMs: r.mean * 1e3, stddevMs: r.stddev * 1e3, userMs: r.user * 1e3, systemMs: r.system * 1e3 }));
const raw = { bench: "add-vs-node", commit, dirty: dirty === "true", date: new Date().toISOString(), node: process.version,
  command: `sh examples/cni-plugin/bench/add-vs-node.sh${etcd ? " (ETCD=" + etcd + ")" : ""}`, runs: Number(runs), results };
require("node:fs").writeFileSync(out, JSON.stringify(raw, null, 2) + "\n");
console.log(`raw result: ${out}`);' "$work/hyperfine.json" "$out" "$commit" "$dirty" "$runs" "${ETCD:-}"
fi
