/** An option's text as a positive integer; otherwise the program's usage error on stderr and exit code 2. */
export function positiveInteger(program: string, name: string, text: string | undefined): number {
  const n = Number(text);
  if (Number.isInteger(n) && n > 0) return n;
  process.stderr.write(`${program}: --${name} is a positive integer, not ${text}\n`);
  process.exit(2);
}
