import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { createKubernetesStore, loadKubeConfig } from "./index.js";

// Found by the security review (RELIABILITY.md): a kubeconfig with a YAML syntax error near its
// token put the token into the error — the YAML parser quotes the lines around the error — and
// from there into the CNI error answer (kubelet logs it) and the reconciler's log.

const TOKEN = "eyJhbGciOi-SECRET-bearer-token-4711";
let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "ipamkit-kc-secret-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const broken = [
  ["an unclosed flow sequence after the token", `users:\n- name: u\n  user:\n    token: ${TOKEN}\n  bad: [unclosed\ncontexts: []\n`],
  ["a bad indentation right after the token", `users:\n- name: u\n  user:\n    token: ${TOKEN}\n   oops: 1\n`],
  ["a tab in the token's line", `users:\n- name: u\n  user:\n\ttoken: ${TOKEN}\n`],
  ["JSON cut short after the token", `{"users":[{"name":"u","user":{"token":"${TOKEN}"`],
] as const;

for (const [what, text] of broken) {
  it(`a kubeconfig with ${what}: the error says where, never the token`, () => {
    const path = join(dir, "kubeconfig");
    writeFileSync(path, text, { mode: 0o600 });
    let message = "";
    try {
      loadKubeConfig(path);
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toContain(`cannot load kubeconfig ${path}`);
    // still says where: line and column
    expect(message).toMatch(/\(\d+:\d+\)/);
    expect(message).not.toContain(TOKEN);
    expect(message).not.toContain("SECRET");
    expect(() => createKubernetesStore({ kubeconfig: path })).toThrow(/cannot load kubeconfig/);
  });
}
