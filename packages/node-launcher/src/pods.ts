import type { CoreV1Api, V1Pod } from "@kubernetes/client-node";
import type { RealNode } from "./launcher.js";
import { pauseImage } from "./pause.js";
import { until } from "./processes.js";

/** A pod bound to `node` (spec.nodeName: no scheduler needed) running the local pause image. */
export function podOnNode(node: RealNode, name: string, namespace: string): V1Pod {
  return {
    metadata: { name, namespace },
    spec: {
      nodeName: node.name,
      terminationGracePeriodSeconds: 1,
      containers: [{ name: "app", image: pauseImage().ref, imagePullPolicy: "Never" }],
    },
  };
}

/** Waits until the pod is Running with an IP; returns the IP (a timeout names the node's logs). */
export async function runningIp(core: CoreV1Api, node: RealNode, name: string, namespace: string): Promise<string> {
  let ip = "";
  try {
    await until(`pod ${name} Running with an IP`, 60_000, async () => {
      const pod = await core.readNamespacedPod({ name, namespace });
      ip = pod.status?.podIPs?.[0]?.ip ?? "";
      return pod.status?.phase === "Running" && ip !== "";
    });
  } catch (error) {
    throw new Error(`${(error as Error).message}\n${node.logTail()}`);
  }
  return ip;
}

/** Deletes the pods (graceful: kubelet stops the sandboxes, the runtime calls DEL) and waits until they are gone. */
export async function deletePodsAndWait(core: CoreV1Api, names: readonly string[], namespace: string): Promise<void> {
  for (const name of names) await core.deleteNamespacedPod({ name, namespace });
  await until(`pods ${names.join(", ")} gone`, 60_000, async () => {
    const pods = await core.listNamespacedPod({ namespace });
    return !pods.items.some((p) => names.includes(p.metadata?.name ?? ""));
  });
}
