import { execFileSync } from "node:child_process";
import { join } from "node:path";

export interface ServingCertificates {
  /** PEM files */
  readonly ca: string;
  readonly cert: string;
  readonly key: string;
  /** The service-account signing key (PEM, EC P-256) and its public half. */
  readonly serviceAccountKey: string;
  readonly serviceAccountPub: string;
}

/**
 * Writes a throw-away CA, a serving certificate for 127.0.0.1 and localhost signed by it, and a
 * service-account key pair into `dir` (openssl; EC P-256 keys, which take milliseconds).
 */
export function makeServingCertificates(dir: string): ServingCertificates {
  const openssl = (...args: string[]) => execFileSync("openssl", args, { cwd: dir, stdio: "pipe" });
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
  openssl("req", "-x509", ...ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=ipamkit-test-kube-ca");
  openssl("req", ...ec, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=kube-apiserver");
  execFileSync("sh", ["-c", "printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\nextendedKeyUsage=serverAuth\\n' > server.ext"], {
    cwd: dir,
  });
  openssl(
    "x509",
    "-req",
    "-in",
    "server.csr",
    "-CA",
    "ca.pem",
    "-CAkey",
    "ca.key",
    "-CAcreateserial",
    "-out",
    "server.pem",
    "-days",
    "2",
    "-extfile",
    "server.ext",
  );
  openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "sa.key");
  openssl("ec", "-in", "sa.key", "-pubout", "-out", "sa.pub");
  const at = (file: string) => join(dir, file);
  return {
    ca: at("ca.pem"),
    cert: at("server.pem"),
    key: at("server.key"),
    serviceAccountKey: at("sa.key"),
    serviceAccountPub: at("sa.pub"),
  };
}
