import { describe, expect, it } from "vitest";
import { CNI_COMMANDS, checkEnv, ENV_TABLE, isCniCommand, parseCniArgs, readEnv, validateContainerId, validateIfName } from "./env.js";
import { CniError } from "./errors.js";
import type { CniCommand } from "./types.js";

function thrown(fn: () => unknown): CniError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(CniError);
    return error as CniError;
  }
  throw new Error("expected a CniError");
}

const FULL = {
  CNI_COMMAND: "ADD",
  CNI_CONTAINERID: "abc123",
  CNI_NETNS: "/var/run/netns/x",
  CNI_IFNAME: "eth0",
  CNI_ARGS: "IgnoreUnknown=1",
  CNI_PATH: "/opt/cni/bin",
};

describe("ENV_TABLE", () => {
  const required = (command: CniCommand) => ENV_TABLE.filter((s) => s.requiredFor.includes(command)).map((s) => s.name);
  it("requires per command what skel requires (CNI_PATH optional for an IPAM plugin)", () => {
    expect(required("ADD")).toEqual(["CNI_COMMAND", "CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME"]);
    expect(required("CHECK")).toEqual(["CNI_COMMAND", "CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME"]);
    expect(required("DEL")).toEqual(["CNI_COMMAND", "CNI_CONTAINERID", "CNI_IFNAME"]);
    expect(required("GC")).toEqual(["CNI_COMMAND"]);
    expect(required("STATUS")).toEqual(["CNI_COMMAND"]);
    expect(required("VERSION")).toEqual(["CNI_COMMAND"]);
  });
  it("lists every CNI variable once", () => {
    expect(ENV_TABLE.map((s) => s.name)).toEqual(["CNI_COMMAND", "CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME", "CNI_ARGS", "CNI_PATH"]);
  });
});

describe("validators", () => {
  it("accepts container ids that start alphanumeric then use [A-Za-z0-9_.-]", () => {
    for (const ok of ["a", "0", "abc123", "A_b.c-D", "f".repeat(64)]) expect(validateContainerId(ok)).toBeUndefined();
    for (const bad of ["", "-abc", "_abc", ".abc", "ab/c", "ab c", "ab:c", "äbc", "abc\n"])
      expect(validateContainerId(bad)).toBeTypeOf("string");
  });
  it("accepts interface names of 1-15 bytes without '/', ':' or whitespace, not '.' or '..'", () => {
    for (const ok of ["eth0", "net1", "a", "x".repeat(15), "...", "eth0.100", "veth-1_a"]) expect(validateIfName(ok)).toBeUndefined();
    for (const bad of ["", ".", "..", "x".repeat(16), "a/b", "a:b", "a b", "a\tb", "ééééééééé"])
      expect(validateIfName(bad)).toBeTypeOf("string");
  });
});

describe("readEnv", () => {
  it("reads the variables, treating empty as unset", () => {
    expect(readEnv(FULL)).toEqual({
      command: "ADD",
      containerId: "abc123",
      netns: "/var/run/netns/x",
      ifName: "eth0",
      args: "IgnoreUnknown=1",
    });
    expect(readEnv({ CNI_COMMAND: "GC", CNI_CONTAINERID: "", CNI_ARGS: "" })).toEqual({ command: "GC", args: undefined });
  });
  it("returns command undefined when CNI_COMMAND is unset or empty", () => {
    expect(readEnv({}).command).toBeUndefined();
    expect(readEnv({ CNI_COMMAND: "" }).command).toBeUndefined();
  });
  it("accepts every command", () => {
    for (const command of CNI_COMMANDS) expect(readEnv({ CNI_COMMAND: command }).command).toBe(command);
    expect(isCniCommand("STATUS")).toBe(true);
    expect(isCniCommand("add")).toBe(false);
  });
  it("rejects an unknown CNI_COMMAND with code 4 naming it", () => {
    for (const bad of ["add", "FOO", "ADD "]) {
      const e = thrown(() => readEnv({ CNI_COMMAND: bad }));
      expect(e.code).toBe(4);
      expect(e.message).toContain(JSON.stringify(bad));
    }
  });
});

describe("checkEnv", () => {
  it("passes a complete environment for every command", () => {
    for (const command of CNI_COMMANDS) expect(() => checkEnv({ ...FULL, CNI_COMMAND: command }, command)).not.toThrow();
  });
  it("does not require CNI_PATH or CNI_ARGS", () => {
    const { CNI_PATH: _p, CNI_ARGS: _a, ...rest } = FULL;
    expect(() => checkEnv(rest, "ADD")).not.toThrow();
  });
  it("does not require CNI_NETNS on DEL", () => {
    expect(() => checkEnv({ ...FULL, CNI_COMMAND: "DEL", CNI_NETNS: undefined }, "DEL")).not.toThrow();
  });
  it("names every missing variable at once", () => {
    const e = thrown(() => checkEnv({ CNI_COMMAND: "ADD" }, "ADD"));
    expect(e.code).toBe(4);
    expect(e.message).toContain("CNI_CONTAINERID, CNI_NETNS, CNI_IFNAME");
    expect(e.message).not.toContain("CNI_PATH");
    const del = thrown(() => checkEnv({ CNI_COMMAND: "DEL", CNI_NETNS: "/x" }, "DEL"));
    expect(del.message).toContain("CNI_CONTAINERID, CNI_IFNAME");
    const check = thrown(() => checkEnv({ CNI_COMMAND: "CHECK", CNI_CONTAINERID: "abc", CNI_IFNAME: "eth0" }, "CHECK"));
    expect(check.message).toContain("CNI_NETNS");
    expect(check.message).not.toContain("CNI_CONTAINERID");
  });
  it("treats empty values as missing", () => {
    const e = thrown(() => checkEnv({ ...FULL, CNI_CONTAINERID: "", CNI_IFNAME: "" }, "ADD"));
    expect(e.message).toContain("CNI_CONTAINERID, CNI_IFNAME");
  });
  it("needs only CNI_COMMAND for GC, STATUS and VERSION", () => {
    for (const command of ["GC", "STATUS", "VERSION"] as const) {
      expect(() => checkEnv({ CNI_COMMAND: command }, command)).not.toThrow();
      expect(thrown(() => checkEnv({}, command)).message).toContain("CNI_COMMAND");
    }
  });
  it("rejects invalid container ids and interface names with code 4, naming the variable and value", () => {
    const id = thrown(() => checkEnv({ ...FULL, CNI_CONTAINERID: "-bad" }, "ADD"));
    expect(id.code).toBe(4);
    expect(id.message).toContain('CNI_CONTAINERID "-bad"');
    const ifname = thrown(() => checkEnv({ ...FULL, CNI_IFNAME: "way-too-long-name" }, "DEL"));
    expect(ifname.message).toContain('CNI_IFNAME "way-too-long-name"');
  });
  it("reports missing and invalid variables together", () => {
    const e = thrown(() => checkEnv({ CNI_COMMAND: "ADD", CNI_CONTAINERID: "a/b", CNI_IFNAME: "." }, "ADD"));
    expect(e.code).toBe(4);
    expect(e.message).toContain("CNI_NETNS");
    expect(e.message).toContain('CNI_CONTAINERID "a/b"');
    expect(e.message).toContain('CNI_IFNAME "."');
  });
  it("ignores malformed ids on commands that do not use them", () => {
    expect(() => checkEnv({ CNI_COMMAND: "GC", CNI_CONTAINERID: "-bad", CNI_IFNAME: "a/b" }, "GC")).not.toThrow();
  });
});

describe("parseCniArgs", () => {
  const empty = { ips: [], ignoreUnknown: false, unknown: [] };
  it("returns empty args for undefined, empty or separator-only text", () => {
    expect(parseCniArgs(undefined)).toEqual(empty);
    expect(parseCniArgs("")).toEqual(empty);
    expect(parseCniArgs(";;; ;")).toEqual(empty);
  });
  it("parses the typical Kubernetes string", () => {
    expect(
      parseCniArgs("IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0;K8S_POD_INFRA_CONTAINER_ID=abc123;K8S_POD_UID=1f2e-3d4c"),
    ).toEqual({
      podNamespace: "default",
      podName: "web-0",
      infraContainerId: "abc123",
      podUid: "1f2e-3d4c",
      ips: [],
      ignoreUnknown: true,
      unknown: [],
    });
  });
  it("accepts every key as optional (no K8S_POD_UID on older runtimes)", () => {
    const args = parseCniArgs("K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p");
    expect(args).toEqual({ podNamespace: "ns", podName: "p", ips: [], ignoreUnknown: false, unknown: [] });
    expect("podUid" in args).toBe(false);
  });
  it("ignores empty segments and blanks, keeps '=' inside values, last key wins", () => {
    expect(parseCniArgs(";K8S_POD_NAME=a=b; ;K8S_POD_NAMESPACE = ns ;").podName).toBe("a=b");
    expect(parseCniArgs(";K8S_POD_NAME=a=b; ;K8S_POD_NAMESPACE = ns ;").podNamespace).toBe("ns");
    expect(parseCniArgs("K8S_POD_NAME=a;K8S_POD_NAME=b").podName).toBe("b");
    expect("podName" in parseCniArgs("K8S_POD_NAME=")).toBe(false);
  });
  it("reads IgnoreUnknown as 1/true/0/false in any case", () => {
    for (const t of ["1", "true", "TRUE", "True"]) expect(parseCniArgs(`IgnoreUnknown=${t}`).ignoreUnknown).toBe(true);
    for (const f of ["0", "false", "FALSE", ""]) expect(parseCniArgs(`IgnoreUnknown=${f}`).ignoreUnknown).toBe(false);
    const e = thrown(() => parseCniArgs("IgnoreUnknown=yes"));
    expect(e.code).toBe(2);
    expect(e.message).toContain('"yes"');
  });
  it("collects unknown keys when IgnoreUnknown is set, wherever it appears", () => {
    expect(parseCniArgs("FOO=1;IgnoreUnknown=1;BAR=2;FOO=3").unknown).toEqual(["FOO", "BAR"]);
    expect(parseCniArgs("IgnoreUnknown=true;MAC=aa:bb").unknown).toEqual(["MAC"]);
  });
  it("rejects unknown keys without IgnoreUnknown (code 2 naming them)", () => {
    const e = thrown(() => parseCniArgs("K8S_POD_NAME=p;FOO=1;BAR=2"));
    expect(e.code).toBe(2);
    expect(e.message).toContain("FOO, BAR");
    expect(thrown(() => parseCniArgs("FOO=1;IgnoreUnknown=0")).code).toBe(2);
    expect(thrown(() => parseCniArgs("k8s_pod_name=p")).message).toContain("k8s_pod_name");
  });
  it("rejects a segment without '=' or with an empty key (code 2 naming it)", () => {
    const e = thrown(() => parseCniArgs("IgnoreUnknown=1;JUSTAKEY"));
    expect(e.code).toBe(2);
    expect(e.message).toContain('"JUSTAKEY"');
    expect(thrown(() => parseCniArgs("=value")).message).toContain('"=value"');
  });
  it("parses IP= as a comma list, strips /prefix and canonicalises", () => {
    expect(parseCniArgs("IP=10.0.0.5").ips).toEqual(["10.0.0.5"]);
    expect(parseCniArgs("IP=10.0.0.5/24,2001:DB8:0::5/64").ips).toEqual(["10.0.0.5", "2001:db8::5"]);
    expect(parseCniArgs("IP= 10.0.0.5 ,, 010.000.000.006 ,").ips).toEqual(["10.0.0.5", "10.0.0.6"]);
    expect(parseCniArgs("IP=").ips).toEqual([]);
  });
  it("rejects a bad IP with code 7 naming the value", () => {
    for (const bad of ["10.0.0.256", "nope", "10.0.0.5/24,fe80::1%eth0"]) {
      const e = thrown(() => parseCniArgs(`IP=${bad}`));
      expect(e.code).toBe(7);
    }
    expect(thrown(() => parseCniArgs("IP=10.0.0.1,bogus/24")).message).toContain('"bogus/24"');
  });
});
