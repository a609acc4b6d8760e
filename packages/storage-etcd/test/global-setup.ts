import { type EtcdInstance, startEtcd } from "@ipamkit/etcd-launcher";
import type { TestProject } from "vitest/node";

let etcd: EtcdInstance | undefined;

export async function setup(project: TestProject): Promise<void> {
  etcd = await startEtcd();
  project.provide("etcdEndpoint", etcd.endpoint);
}

export async function teardown(): Promise<void> {
  await etcd?.stop();
}

declare module "vitest" {
  export interface ProvidedContext {
    etcdEndpoint: string;
  }
}
