/** Milliseconds as a table shows them: whole above 100, one decimal below. */
export const ms = (x: number): string => `${x >= 100 ? x.toFixed(0) : x.toFixed(1)} ms`;
/** Seconds with one decimal. */
export const s = (x: number): string => `${x.toFixed(1)} s`;
/** A ratio with two decimals (three significant figures below 0.1). */
export const ratio = (x: number): string => (x < 0.1 ? x.toPrecision(2) : x.toFixed(2));
/** A count with thousands separators. */
export const count = (n: number): string => Math.round(n).toLocaleString("en");
/** `a–b` of some numbers formatted by `f` (one value: just it). */
export function span(xs: readonly number[], f: (x: number) => string): string {
  const lo = Math.min(...xs);
  const hi = Math.max(...xs);
  return lo === hi ? f(lo) : `${f(lo).replace(/ (ms|s)$/, "")}–${f(hi)}`;
}
/** Whether a target was met, as the tables say it. */
export const target = (text: string, met: boolean): string => `${text}: ${met ? "met" : "**missed**"}`;
