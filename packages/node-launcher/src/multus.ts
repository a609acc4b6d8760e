import { readFileSync } from "node:fs";
import type { KubeApiserver } from "@ipamkit/kube-apiserver-launcher";
import {
  ApiextensionsV1Api,
  CustomObjectsApi,
  type KubernetesObject,
  loadAllYaml,
  type V1CustomResourceDefinition,
  type V1Pod,
} from "@kubernetes/client-node";
import { until } from "./processes.js";

export const NAD_GROUP = "k8s.cni.cncf.io";
export const NAD_PLURAL = "network-attachment-definitions";
export const NETWORKS_ANNOTATION = "k8s.v1.cni.cncf.io/networks";
export const NETWORK_STATUS_ANNOTATION = "k8s.v1.cni.cncf.io/network-status";

/**
 * Multus' thin plugin as a node's primary CNI config: the shape of the `cni-conf.json` in Multus'
 * own deployment manifest (kubeconfig at /etc/cni/net.d/multus.d/multus.kubeconfig), delegating the
 * pod network to a bridge (isGateway, default route) with host-local IPAM on the node's /24.
 */
export function multusConf(options: { bridge: string; subnet: string; logFile?: string }): string {
  return JSON.stringify(
    {
      cniVersion: "1.0.0",
      name: "multus-cni-network",
      type: "multus",
      capabilities: { portMappings: true },
      kubeconfig: "/etc/cni/net.d/multus.d/multus.kubeconfig",
      ...(options.logFile ? { logFile: options.logFile, logLevel: "verbose" } : {}),
      delegates: [
        {
          cniVersion: "1.0.0",
          name: "default-cni-network",
          plugins: [
            {
              type: "bridge",
              bridge: options.bridge,
              isGateway: true,
              isDefaultGateway: true,
              ipMasq: false,
              hairpinMode: false,
              ipam: { type: "host-local", ranges: [[{ subnet: options.subnet }]] },
            },
            { type: "portmap", capabilities: { portMappings: true } },
          ],
        },
      ],
    },
    null,
    2,
  );
}

/** Installs the NetworkAttachmentDefinition CRD from Multus' own manifest; resolves once it is served. */
export async function installNadCrd(apiserver: KubeApiserver, manifest: string): Promise<void> {
  const objects = loadAllYaml(readFileSync(manifest, "utf8")) as KubernetesObject[];
  const crd = objects.find((o) => o.kind === "CustomResourceDefinition") as V1CustomResourceDefinition | undefined;
  if (crd === undefined) throw new Error(`[node-launcher] ${manifest} holds no CustomResourceDefinition`);
  const api = apiserver.kubeConfig.makeApiClient(ApiextensionsV1Api);
  await api.createCustomResourceDefinition({ body: crd });
  const objectsApi = apiserver.kubeConfig.makeApiClient(CustomObjectsApi);
  await until("the NetworkAttachmentDefinition CRD served", 30_000, async () => {
    try {
      await objectsApi.listClusterCustomObject({ group: NAD_GROUP, version: "v1", plural: NAD_PLURAL });
      return true;
    } catch {
      return false;
    }
  });
}

/** Creates a NetworkAttachmentDefinition whose `spec.config` is `config` (a CNI config, as users write it). */
export async function createNad(apiserver: KubeApiserver, options: { name: string; namespace: string; config: object }): Promise<void> {
  const api = apiserver.kubeConfig.makeApiClient(CustomObjectsApi);
  await api.createNamespacedCustomObject({
    group: NAD_GROUP,
    version: "v1",
    namespace: options.namespace,
    plural: NAD_PLURAL,
    body: {
      apiVersion: `${NAD_GROUP}/v1`,
      kind: "NetworkAttachmentDefinition",
      metadata: { name: options.name, namespace: options.namespace },
      spec: { config: JSON.stringify(options.config, null, 2) },
    },
  });
}

/** One entry of a pod's Multus `network-status` annotation. */
export interface NetworkStatus {
  readonly name: string;
  readonly interface?: string;
  readonly ips?: readonly string[];
  readonly default?: boolean;
}

/** The pod's `network-status` annotation, parsed ([] when Multus has not written it). */
export function networkStatus(pod: V1Pod): NetworkStatus[] {
  const raw = pod.metadata?.annotations?.[NETWORK_STATUS_ANNOTATION];
  if (raw === undefined) return [];
  return JSON.parse(raw) as NetworkStatus[];
}
