import { readFileSync, unwatchFile, watchFile } from "node:fs";
import { Cron } from "croner";
import type { Logger } from "pino";
import { checkSchedule } from "./args.js";

export interface ScheduleOptions {
  schedule: string;
  /** Whereabouts' `/cron-schedule/config` (a ConfigMap key): wins over `schedule`, re-read when it changes. */
  scheduleFile?: string;
  logger: Logger;
  /** Poll interval of the schedule file (default 10 s; ConfigMap updates arrive as file swaps). */
  pollMs?: number;
}

/** The schedule from the file when it holds a valid one, else the flag's; an invalid file is logged, never silently used. */
function currentSchedule(options: ScheduleOptions): string {
  if (options.scheduleFile === undefined) return options.schedule;
  let text: string;
  try {
    text = readFileSync(options.scheduleFile, "utf8");
  } catch {
    return options.schedule;
  }
  try {
    return checkSchedule(options.scheduleFile, text);
  } catch (error) {
    options.logger.error(
      { file: options.scheduleFile, err: error },
      "schedule file holds no valid cron expression; keeping the current schedule",
    );
    return options.schedule;
  }
}

/** Runs `job` on the cron schedule (UTC, never two runs at once) until `signal` aborts. */
export async function runOnSchedule(options: ScheduleOptions, job: () => Promise<void>, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return;
  let expression = currentSchedule(options);
  const start = (pattern: string) => {
    const cron = new Cron(pattern, { timezone: "UTC", protect: true }, job);
    options.logger.info({ schedule: pattern, next: cron.nextRun()?.toISOString() }, "reconcile scheduled");
    return cron;
  };
  let cron = start(expression);
  const file = options.scheduleFile;
  const reload = () => {
    const next = currentSchedule(options);
    if (next === expression) return;
    cron.stop();
    expression = next;
    cron = start(expression);
  };
  if (file !== undefined) watchFile(file, { interval: options.pollMs ?? 10_000 }, reload);
  await new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
  if (file !== undefined) unwatchFile(file, reload);
  cron.stop();
}
