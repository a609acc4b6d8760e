/**
 * metav1.MicroTime, the type of a Lease's `spec.acquireTime` and `spec.renewTime`. The API server
 * parses it with Go's layout "2006-01-02T15:04:05.000000Z07:00": exactly 6 fractional digits,
 * anything else is 400. A JavaScript Date serialised by client-node has 3
 * (kubernetes-client/javascript#828), so lease times are sent as strings made here.
 */

/** `2026-12-02T10:00:00.123000Z`: UTC, 6 fractional digits (a Date holds milliseconds only). */
export function formatMicroTime(date: Date): string {
  const iso = date.toISOString(); // RangeError for an invalid Date
  return `${iso.slice(0, -1)}000Z`;
}

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/;

/**
 * Reads an RFC 3339 time with any fractional precision or none (metav1.Time has none, MicroTime 6),
 * in UTC or with an offset. Digits beyond milliseconds are truncated. `undefined` when it is not one.
 */
export function parseMicroTime(text: string): Date | undefined {
  const match = RFC3339.exec(text);
  if (match === null) return undefined;
  const [year, month, day, hour, minute, second] = match.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  const millis = Number((match[7] ?? "").slice(0, 3).padEnd(3, "0"));
  if (month < 1 || month > 12 || hour > 23 || minute > 59 || second > 59) return undefined;
  const date = new Date(Date.UTC(2000, month - 1, day, hour, minute, second, millis));
  date.setUTCFullYear(year); // Date.UTC reads years 0-99 as 1900-1999
  if (date.getUTCDate() !== day) return undefined; // e.g. February 30
  const offsetMinutes = match[8] !== undefined ? 0 : (match[9] === "-" ? -1 : 1) * (Number(match[10]) * 60 + Number(match[11]));
  if (Number(match[10] ?? 0) > 23 || Number(match[11] ?? 0) > 59) return undefined;
  return new Date(date.getTime() - offsetMinutes * 60_000);
}
