import pino from "pino";
import { type Parsed, parseInstallArgs, USAGE } from "./install-args.js";
import { InstallError } from "./install-files.js";
import { installBinaries, renderConfig, watchConfig, writeConfig } from "./install-run.js";
import { type UninstallOptions, uninstall } from "./uninstall.js";

// ipamkit-install: the DaemonSet's installer. Run once (the init container) it installs the plugin
// into the host's CNI bin dir and writes whereabouts.d/{whereabouts.conf,whereabouts.kubeconfig,
// nodename}; with --watch (the watcher container) it keeps those files current, rewriting the
// kubeconfig whenever the projected ServiceAccount token or CA rotates; --uninstall (or
// --uninstall-on-exit, when the watcher stops) takes ipamkit's files off the host (uninstall.ts).

/** Runs the uninstall and logs what it removed, kept and why; 0 unless it failed. */
function runUninstall(options: UninstallOptions, logger: pino.Logger): number {
  try {
    const report = uninstall(options);
    const inUse = report.inUse.map((a) => (a.unreadable === undefined ? a.file : `${a.file} (unreadable: ${a.unreadable})`));
    if (report.restored.length > 0)
      logger.warn({ restored: report.restored, inUse }, "an attachment appeared during the uninstall: files put back");
    else if (inUse.length > 0)
      logger.warn({ kept: report.kept.map((k) => k.path), inUse }, "ipamkit's files left on the host: attachments still use them");
    logger.info({ removed: report.removed, kept: report.kept }, "uninstall finished");
    return 0;
  } catch (error) {
    process.stderr.write(`ipamkit-install: uninstall failed: ${(error as Error).message}\n`);
    return 1;
  }
}

async function main(): Promise<number> {
  let parsed: Parsed | "help";
  try {
    parsed = parseInstallArgs(process.argv.slice(2), process.env);
  } catch (error) {
    process.stderr.write(`ipamkit-install: ${(error as Error).message}\n${USAGE}\n`);
    return 2;
  }
  if (parsed === "help") {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const logger = pino({ base: { component: "ipamkit-install" } });
  const { options } = parsed;
  if (parsed.uninstall === "now") return runUninstall(options, logger);
  try {
    const config = renderConfig(options); // first: a missing token or environment fails before the host is touched
    if (!parsed.skipBinaries) logger.info({ files: installBinaries(options) }, "plugin installed");
    logger.info({ files: writeConfig(config) }, "configuration written");
  } catch (error) {
    const code = error instanceof InstallError ? error.code : "FAILED";
    process.stderr.write(`ipamkit-install: ${code}: ${(error as Error).message}\n`);
    return 1;
  }
  if (!parsed.watch) return 0;
  const stop = new AbortController();
  for (const signal of ["SIGTERM", "SIGINT"] as const) process.once(signal, () => stop.abort());
  logger.info({ intervalMs: parsed.intervalMs }, "watching the ServiceAccount token and CA");
  await watchConfig(options, {
    intervalMs: parsed.intervalMs,
    signal: stop.signal,
    onWrite: (written) => logger.info({ written }, "configuration rewritten"),
    onError: (error) => logger.warn(`cannot refresh the configuration (retrying): ${error.message}`),
  });
  logger.info("stopped");
  return parsed.uninstall === "on-exit" ? runUninstall(options, logger) : 0;
}

void main().then((code) => {
  process.exitCode = code;
});
