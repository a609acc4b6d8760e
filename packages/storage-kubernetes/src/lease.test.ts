import { performance } from "node:perf_hooks";
import { binaryPaths, type KubeApiserver, startKubeApiserver } from "@ipamkit/kube-apiserver-launcher";
import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createObjectApi, type ObjectApi } from "./api.js";
import { LEASE_ANNOTATION, LeaseUnavailableError, whereaboutsLease } from "./lease.js";
import { formatMicroTime } from "./microtime.js";
import type { Kind, KubeObject } from "./objects.js";

const LEASE: Kind = { kind: "Lease", plural: "leases", group: "coordination.k8s.io", version: "v1" };
const MICRO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/;

describe(`whereaboutsLease on kube-apiserver ${binaryPaths().kubernetesVersion}`, () => {
  let server: KubeApiserver;
  let kubeConfig: KubeConfig;
  let namespace: string;
  let api: ObjectApi;
  let seq = 0;

  beforeAll(async () => {
    server = await startKubeApiserver();
    kubeConfig = server.kubeConfig;
  }, 120_000);
  afterAll(async () => {
    api?.close();
    await server?.stop();
  });
  beforeEach(async () => {
    api?.close();
    namespace = `lease-${process.pid}-${seq++}`;
    await kubeConfig.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });
    api = createObjectApi({ kubeConfig, namespace, requestTimeoutMs: 10_000, pageSize: 1 });
  });

  const read = async () => (await api.get(LEASE, "whereabouts")) as (KubeObject & { spec: Record<string, unknown> }) | undefined;
  /** What Whereabouts' client-go writes when it takes the Lease. */
  const holdAs = async (holder: string, seconds = 1) => {
    const time = formatMicroTime(new Date());
    const spec = { holderIdentity: holder, leaseDurationSeconds: seconds, acquireTime: time, renewTime: time };
    const lease = await read();
    if (lease === undefined)
      return api.create(LEASE, { apiVersion: "coordination.k8s.io/v1", kind: "Lease", metadata: { name: "whereabouts" }, spec });
    return api.replace(LEASE, { ...lease, spec: { ...lease.spec, ...spec } });
  };

  it("auto: takes part only while Whereabouts is seen writing the Lease, and stops an hour after it was last seen", async () => {
    const auto = (now?: () => Date) =>
      whereaboutsLease({ kubeconfig: kubeConfig, namespace, identity: "ipamkit/auto", auto: {}, ...(now === undefined ? {} : { now }) });
    // no Lease (no Whereabouts ever ran): fn runs, nothing is written
    expect(await auto()(async () => read())).toBeUndefined();
    expect(await read()).toBeUndefined();
    // Whereabouts took and released it (client-go: empty holder, its own renewTime)
    await holdAs("ns/whereabouts-pod");
    const released = await read();
    await api.replace(LEASE, { ...released, spec: { ...released?.spec, holderIdentity: "" } });
    const whereaboutsTime = (await read())?.spec.renewTime as string;
    const during = await auto()(async () => read());
    expect(during?.spec.holderIdentity).toBe("ipamkit/auto");
    const after = await read();
    expect(after?.spec.holderIdentity).toBe("");
    expect(after?.metadata?.annotations?.[LEASE_ANNOTATION.renewTime]).toBe(after?.spec.renewTime);
    expect(Date.parse(after?.metadata?.annotations?.[LEASE_ANNOTATION.whereaboutsSeen] ?? "")).toBe(Date.parse(whereaboutsTime));
    // ipamkit wrote last, but Whereabouts was seen within the hour: still taken
    expect((await auto()(async () => read()))?.spec.holderIdentity).toBe("ipamkit/auto");
    // an hour past the last sighting: fn runs without the Lease, which is not written
    const later = () => new Date(Date.parse(whereaboutsTime) + 3_600_001);
    const version = (await read())?.metadata?.resourceVersion;
    expect((await auto(later)(async () => read()))?.spec.holderIdentity).toBe("");
    expect((await read())?.metadata?.resourceVersion).toBe(version);
  });

  it("creates the Lease, holds it with 6-digit MicroTimes while fn runs, and releases it after", async () => {
    const exclusive = whereaboutsLease({ kubeconfig: kubeConfig, namespace, identity: "ipamkit/test" });
    const during = await exclusive(async () => read());
    expect(during?.spec).toMatchObject({ holderIdentity: "ipamkit/test", leaseDurationSeconds: 1 });
    expect(during?.spec.acquireTime).toMatch(MICRO);
    const after = await read();
    expect(after?.spec.holderIdentity).toBe("");
    // a second hold takes the released record at once
    const started = performance.now();
    await exclusive(async () => undefined);
    expect(performance.now() - started).toBeLessThan(900);
  });

  it("waits while another identity renews it, and takes it once unchanged for leaseDurationSeconds", async () => {
    await holdAs("ns/whereabouts-pod");
    let renewing = true;
    const renewer = (async () => {
      for (let i = 0; i < 3 && renewing; i++) {
        await new Promise((r) => setTimeout(r, 400));
        await holdAs("ns/whereabouts-pod");
      }
    })();
    const renewsStop = performance.now() + 1200;
    const exclusive = whereaboutsLease({ kubeconfig: kubeConfig, namespace, identity: "ipamkit/waiter" });
    const at = await exclusive(async () => performance.now());
    renewing = false;
    await renewer;
    // not before the last renewal + 1 s (the holder crashed: no release)
    expect(at).toBeGreaterThan(renewsStop + 900);
    expect((await read())?.spec.holderIdentity).toBe("");
  });

  it("takes an unchanged record after its own leaseDurationSeconds, judged from first observation", async () => {
    await holdAs("ns/crashed", 2);
    const started = performance.now();
    await whereaboutsLease({ kubeconfig: kubeConfig, namespace })(async () => undefined);
    const waited = performance.now() - started;
    expect(waited).toBeGreaterThanOrEqual(2000);
    expect(waited).toBeLessThan(4000);
  });

  it("is mutually exclusive among concurrent holders, retrying the lost compare-and-swaps", async () => {
    const exclusive = whereaboutsLease({ kubeconfig: kubeConfig, namespace, pollMs: 20 });
    let inside = 0;
    let most = 0;
    const order: number[] = [];
    const started = performance.now();
    await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        exclusive(async () => {
          inside++;
          most = Math.max(most, inside);
          await new Promise((r) => setTimeout(r, 30));
          order.push(i);
          inside--;
        }),
      ),
    );
    expect(most).toBe(1);
    // a hold ends when fn does (the renewal timer does not keep it): 6 x 30 ms, plus the polling
    expect(performance.now() - started).toBeLessThan(2000);
    expect(order.sort()).toEqual([0, 1, 2, 3, 4, 5]);
    expect((await read())?.spec.holderIdentity).toBe("");
  });

  it("gives up at the deadline with a retryable error naming the Lease, without running fn", async () => {
    await holdAs("ns/busy", 30);
    let ran = false;
    const exclusive = whereaboutsLease({ kubeconfig: kubeConfig, namespace, deadline: Date.now() + 700 });
    const outcome = exclusive(async () => {
      ran = true;
    });
    await expect(outcome).rejects.toBeInstanceOf(LeaseUnavailableError);
    await expect(outcome).rejects.toMatchObject({ code: "STORE_UNAVAILABLE", retryable: true });
    await expect(outcome).rejects.toThrow(`Lease ${namespace}/whereabouts still held by ns/busy`);
    expect(ran).toBe(false);
    expect((await read())?.spec.holderIdentity).toBe("ns/busy");
  });
});
