import { inspect } from "node:util";
import { InvalidRequestError } from "@ipamkit/core";
import { expect, it } from "vitest";
import { createEtcdStore, etcdOptionsFromWhereabouts } from "./index.js";

// Found by the security review (RELIABILITY.md): an etcd_host written as
// http://user:password@host:2379 put the password into the CNI error answer (the endpoint is
// named in every store error, and gRPC names its target). etcd3 cannot use such a URL anyway:
// it is refused at once, naming the endpoint with its credentials redacted.

const SECRET = "hunter2-SECRET";

for (const host of [`http://ipam:${SECRET}@127.0.0.1:2379`, `ipam:${SECRET}@127.0.0.1:2379`, `https://${SECRET}@etcd-0:2379`]) {
  it(`an endpoint with credentials (${host.replace(SECRET, "…")}) is refused without echoing them`, () => {
    let error: unknown;
    try {
      createEtcdStore(etcdOptionsFromWhereabouts({ etcd_host: `etcd-1:2379,${host}` }));
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(InvalidRequestError);
    expect((error as Error).message).toContain("etcd_username");
    expect((error as Error).message).toContain("<redacted>@");
    expect(inspect(error, { depth: 10 })).not.toContain(SECRET);
  });
}

it("an endpoint without credentials is accepted (the client connects lazily)", async () => {
  const store = createEtcdStore({ endpoints: ["http://127.0.0.1:2379", "etcd-0:2379"] });
  await store.close();
});
