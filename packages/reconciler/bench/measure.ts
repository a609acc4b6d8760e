/** What one measured call cost: CPU (user + system, whole process) and wall time, in ms. */
export interface Sample {
  cpu: number;
  wall: number;
}

/** CPU and wall time of one call, in ms, with its value. */
export async function measure<T>(run: () => T | Promise<T>): Promise<Sample & { value: T }> {
  const cpu = process.cpuUsage();
  const t = performance.now();
  const value = await run();
  const d = process.cpuUsage(cpu);
  return { value, cpu: (d.user + d.system) / 1000, wall: performance.now() - t };
}

export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
