import { InvalidRequestError } from "@ipamkit/core";
import { expect, it } from "vitest";
import { createEtcdStore, etcdOptionsFromWhereabouts } from "./index.js";

// Found by the security review's TLS campaign (RELIABILITY.md): a TLS file that cannot be read
// (etcd_ca_cert_file, etcd_cert_file, etcd_key_file) threw a bare ENOENT, which the CNI plugin
// answered as an internal error (999). It is a configuration error naming the key and the file.

for (const [key, option] of [
  ["etcd_ca_cert_file", "caFile"],
  ["etcd_cert_file", "certFile"],
  ["etcd_key_file", "keyFile"],
] as const) {
  it(`an unreadable ${key} is InvalidRequestError naming the key and the path`, () => {
    const path = `/nonexistent-ipamkit/${key}.pem`;
    let error: unknown;
    try {
      createEtcdStore(etcdOptionsFromWhereabouts({ etcd_host: "127.0.0.1:2379", [key]: path }));
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(InvalidRequestError);
    expect((error as Error).message).toContain(path);
    expect((error as Error).message).toContain(option);
    expect((error as Error).message).toContain(key);
  });
}
