import { describe, expect, it } from "vitest";
import { apiserverCounts, countsBetween, etcdCounts, ipamShare, perCallText } from "./requests.js";

// The parsers of the servers' own counters (src/requests.ts); the scenario test reads them from the
// real servers (kube-apiserver, etcd) and the stand-in.
describe("request counts", () => {
  it("reads kube-apiserver's apiserver_request_total by verb and resource, every code and component summed", () => {
    const metrics = [
      "# HELP apiserver_request_total [STABLE] Counter of apiserver requests",
      "# TYPE apiserver_request_total counter",
      'apiserver_request_total{code="201",component="apiserver",dry_run="",group="whereabouts.cni.cncf.io",resource="overlappingrangeipreservations",scope="resource",subresource="",verb="POST",version="v1alpha1"} 7',
      'apiserver_request_total{code="409",component="apiserver",dry_run="",group="whereabouts.cni.cncf.io",resource="overlappingrangeipreservations",scope="resource",subresource="",verb="POST",version="v1alpha1"} 2',
      'apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="status",verb="PUT",version="v1"} 3',
      'apiserver_request_total{code="200",component="apiserver",dry_run="",group="whereabouts.cni.cncf.io",resource="ippools",scope="namespace",subresource="",verb="LIST",version="v1alpha1"} 1',
      'apiserver_request_total{code="200",component="",dry_run="",group="",resource="",scope="",subresource="/metrics",verb="GET",version=""} 4',
      'apiserver_request_duration_seconds_count{resource="ippools",verb="PUT"} 99',
    ].join("\n");
    expect(apiserverCounts(metrics)).toEqual({
      "create overlappingrangeipreservations": 9,
      "update pods/status": 3,
      "list ippools": 1,
    });
  });

  it("reads etcd's handled unary RPCs of the KV and Lease services by method", () => {
    const metrics = [
      'grpc_server_handled_total{grpc_code="OK",grpc_method="Txn",grpc_service="etcdserverpb.KV",grpc_type="unary"} 12',
      'grpc_server_handled_total{grpc_code="FailedPrecondition",grpc_method="Txn",grpc_service="etcdserverpb.KV",grpc_type="unary"} 1',
      'grpc_server_handled_total{grpc_code="OK",grpc_method="Range",grpc_service="etcdserverpb.KV",grpc_type="unary"} 5',
      'grpc_server_handled_total{grpc_code="OK",grpc_method="Watch",grpc_service="etcdserverpb.Watch",grpc_type="bidi_stream"} 2',
      'grpc_server_handled_total{grpc_code="OK",grpc_method="Check",grpc_service="grpc.health.v1.Health",grpc_type="unary"} 8',
    ].join("\n");
    expect(etcdCounts(metrics)).toEqual({ Txn: 13, Range: 5 });
  });

  it("tells a step's counts, the IPAM's share (the simulation's pods left out) and requests per call", () => {
    const between = countsBetween(
      { "get ippools": 5, "create pods": 1 },
      { "get ippools": 5, "update ippools": 30, "create overlappingrangeipreservations": 30, "create pods": 11, "update pods/status": 10 },
    );
    expect(between).toEqual({
      "update ippools": 30,
      "create overlappingrangeipreservations": 30,
      "create pods": 10,
      "update pods/status": 10,
    });
    expect(ipamShare(between)).toEqual({ "update ippools": 30, "create overlappingrangeipreservations": 30 });
    expect(perCallText(between, 15, "ADD")).toBe("4.00 per ADD (2.00 create overlappingrangeipreservations, 2.00 update ippools)");
  });
});
