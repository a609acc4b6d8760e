import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { findWhereabouts, type KubeApiserver } from "@ipamkit/kube-apiserver-launcher";
import {
  CoreV1Api,
  type KubernetesObject,
  KubernetesObjectApi,
  loadAllYaml,
  type V1ConfigMap,
  type V1Container,
  type V1DaemonSet,
} from "@kubernetes/client-node";
import type { ClusterIpam } from "./cluster-ipam.js";
import { readyOnEvery } from "./cluster-ipam.js";
import { must, until } from "./processes.js";

const NAMESPACE = "kube-system";
const LABEL = "app=whereabouts";
/** Whereabouts' reconciler schedule in the tests: every minute (its installer's default is daily, 30 4 * * *). */
export const WHEREABOUTS_TEST_CRON = "* * * * *";

/** `ip-control-loop` alone in an image built from scratch (static binary), cached per version. */
function controlLoopImage(binary: string, version: string): { archive: string; ref: string } {
  const ref = `localhost/whereabouts-control-loop:${version}`;
  const dir = join(binary, "..", "image");
  const archive = join(dir, "control-loop.oci.tar");
  if (existsSync(archive)) return { archive, ref };
  mkdirSync(dir, { recursive: true });
  const work = mkdtempSync(join(tmpdir(), "ipamkit-wb-image-"));
  const buildah = ["--root", join(work, "storage"), "--runroot", join(work, "run"), "--storage-driver", "vfs"];
  let ctr = "";
  try {
    ctr = must("buildah", [...buildah, "from", "scratch"]);
    must("buildah", [...buildah, "copy", ctr, binary, "/ip-control-loop"]);
    must("buildah", [...buildah, "config", "--entrypoint", '["/ip-control-loop"]', ctr]);
    const tmp = `${archive}.tmp.${process.pid}`;
    must("buildah", [...buildah, "commit", "--format", "oci", ctr, `oci-archive:${tmp}:${ref}`]);
    renameSync(tmp, archive);
    return { archive, ref };
  } finally {
    if (ctr) spawnSync("buildah", [...buildah, "rm", ctr]);
    rmSync(work, { recursive: true, force: true });
  }
}

/**
 * Whereabouts as its own install manifest (doc/crds/daemonset-install.yaml of the same version)
 * sets it up: its ServiceAccount, ClusterRole and binding as they are; its ConfigMap with the
 * reconciler's schedule set to every minute; its DaemonSet with the container running
 * `ip-control-loop` from an image of that binary alone (upstream's image also runs its install
 * script, whose work — the binary and the flat file with a kubeconfig on every node — the launcher
 * does), and the API server named on loopback (no kube-proxy here). The CNI binary goes into every
 * node's /opt/cni/bin under `whereabouts`.
 */
export async function installWhereaboutsControlLoop(apiserver: KubeApiserver): Promise<ClusterIpam> {
  const build = findWhereabouts();
  const image = controlLoopImage(build.controlLoop, build.version);
  // kubectl reads manifests as YAML 1.1, where `defaultMode: 0744` is octal; the client's parser
  // reads YAML 1.2, where octal is written 0o744
  const manifest = readFileSync(build.installManifest, "utf8").replace(
    /(defaultMode:\s*)0([0-7]+)\b/g,
    (_, key, digits) => `${key}0o${digits}`,
  );
  const objects = loadAllYaml(manifest) as KubernetesObject[];
  const port = new URL(apiserver.url).port;
  for (const object of objects) {
    if (object.kind === "ConfigMap") (object as V1ConfigMap).data = { "cron-expression": WHEREABOUTS_TEST_CRON };
    if (object.kind !== "DaemonSet") continue;
    const spec = (object as V1DaemonSet).spec?.template.spec;
    for (const c of (spec?.containers ?? []) as V1Container[]) {
      c.image = image.ref;
      c.imagePullPolicy = "Never";
      c.command = ["/ip-control-loop"];
      c.args = ["-log-level", "debug"];
      // upstream's container is privileged for its install script, which this image does not run
      // (the launcher does its work); ip-control-loop only talks to the API server
      c.securityContext = {};
      c.env = [...(c.env ?? []), { name: "KUBERNETES_SERVICE_HOST", value: "127.0.0.1" }, { name: "KUBERNETES_SERVICE_PORT", value: port }];
    }
  }
  const generic = KubernetesObjectApi.makeApiClient(apiserver.kubeConfig);
  for (const object of objects) await generic.create(object);
  const core = apiserver.kubeConfig.makeApiClient(CoreV1Api);
  const kubeconfig = readFileSync(apiserver.kubeconfigPath, "utf8");
  return {
    kind: "whereabouts",
    images: [image.archive],
    cniBinaries: { whereabouts: build.binary },
    // what Whereabouts' install script writes on every node
    cniFiles: {
      "whereabouts.d/whereabouts.conf": JSON.stringify({
        datastore: "kubernetes",
        kubernetes: { kubeconfig: "/etc/cni/net.d/whereabouts.d/whereabouts.kubeconfig" },
        reconciler_cron_expression: WHEREABOUTS_TEST_CRON,
      }),
      "whereabouts.d/whereabouts.kubeconfig": kubeconfig,
    },
    async ready(nodes) {
      await until("Whereabouts' control loop Ready on every node", 120_000, () => readyOnEvery(core, NAMESPACE, LABEL, nodes));
    },
    async upgrade() {
      throw new Error("[node-launcher] a Whereabouts cluster has no chart to upgrade");
    },
    async deleteAgents() {
      throw new Error("[node-launcher] a Whereabouts cluster has no agent");
    },
    async uninstall(): Promise<string> {
      throw new Error("[node-launcher] a Whereabouts cluster has no chart to uninstall");
    },
    async install() {
      throw new Error("[node-launcher] a Whereabouts cluster has no chart to install");
    },
    pods: async () => (await core.listNamespacedPod({ namespace: NAMESPACE, labelSelector: LABEL })).items,
  };
}
