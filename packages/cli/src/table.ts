/** A plain table: a header, a rule of dashes, rows; columns padded to their widest cell (the last one not). */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join("  ")
      .trimEnd();
  return [line(header), line(widths.map((w) => "-".repeat(w))), ...rows.map(line)].join("\n");
}

/** `used / capacity` as a percentage with one decimal. */
export function percent(used: number, capacity: bigint): string {
  if (capacity === 0n) return "-";
  return `${((used * 1000) / Number(capacity) / 10).toFixed(1)}%`;
}

/** How long ago an ISO time was: `42s`, `7m`, `3h`, `12d`; `-` when unknown. */
export function age(createdAt: string | undefined, now: Date): string {
  if (createdAt === undefined) return "-";
  const ms = now.getTime() - Date.parse(createdAt);
  if (Number.isNaN(ms)) return "-";
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.floor(s / 60)}m`;
  if (s < 172_800) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86_400)}d`;
}
