/**
 * metav1.MicroTime as the API server parses it: Go's time.Parse with layout
 * "2006-01-02T15:04:05.000000Z07:00", so exactly 6 fractional digits. A Date serialised by
 * JavaScript (3 digits) is refused (kubernetes-client/javascript#828).
 */
export const MICRO_TIME_LAYOUT = "2006-01-02T15:04:05.000000Z07:00";

const HEAD = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})/;

/** The normalised value (UTC, 6 digits), or the Go parse error text. */
export function parseMicroTime(value: string): string | { error: string } {
  const fail = (detail: string) => ({ error: `parsing time ${JSON.stringify(value)} as "${MICRO_TIME_LAYOUT}": ${detail}` });
  const head = HEAD.exec(value);
  if (head === null) return fail(`cannot parse ${JSON.stringify(value)} as "2006"`);
  const rest = value.slice(head[0].length);
  const fraction = /^\.(\d{6})/.exec(rest);
  if (fraction === null) return fail(`cannot parse ${JSON.stringify(rest)} as ".000000"`);
  const zone = rest.slice(7);
  const offset = /^(?:Z|([+-])(\d{2}):(\d{2}))$/.exec(zone);
  if (offset === null) return fail(`cannot parse ${JSON.stringify(zone)} as "Z07:00"`);
  const [year, month, day, hour, minute, second] = head.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  const date = new Date(Date.UTC(year, month - 1, day, hour, minute, second));
  date.setUTCFullYear(year);
  if (month < 1 || month > 12) return { error: `parsing time ${JSON.stringify(value)}: month out of range` };
  if (date.getUTCDate() !== day || hour > 23 || minute > 59 || second > 59)
    return { error: `parsing time ${JSON.stringify(value)}: day out of range` };
  const sign = offset[1] === "-" ? -1 : 1;
  const shift = offset[1] === undefined ? 0 : sign * (Number(offset[2]) * 60 + Number(offset[3]));
  const utc = new Date(date.getTime() - shift * 60_000);
  return `${utc.toISOString().slice(0, 19)}.${fraction[1]}Z`;
}

/** metav1.Time: RFC 3339 with whole seconds, as `creationTimestamp` is written. */
export function rfc3339(date: Date): string {
  return `${date.toISOString().slice(0, 19)}Z`;
}
