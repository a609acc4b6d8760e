/**
 * Reversible, filesystem-safe names for network names, CIDRs and addresses.
 *
 * Lower-case letters, digits, '-' and '.' are kept (a leading '.' is escaped, so no name is hidden,
 * "." or ".."); every other byte of the UTF-8 text, '_' and upper-case letters included, becomes
 * `_XX` (two upper-case hex digits). Escaping upper case keeps distinct names distinct on
 * case-insensitive filesystems. The empty string (the unnamed network) is the single name `_`,
 * which no other text encodes to (every other '_' is followed by two hex digits).
 *
 * `10.0.0.0/16` → `10.0.0.0_2F16`, `2001:db8::/64` → `2001_3Adb8_3A_3A_2F64`, `""` → `_`.
 */

const KEEP = /^[a-z0-9.-]$/;
const EMPTY = "_";
/** Linux NAME_MAX is 255 bytes; the encoded name is ASCII. */
export const MAX_ENCODED_LENGTH = 255;

/** False for text holding a lone UTF-16 surrogate, which has no UTF-8 form (and would collide with U+FFFD). */
export function isWellFormed(text: string): boolean {
  return !/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(text);
}

/** The file name for `text` (which must be well-formed: see {@link isWellFormed}). */
export function encodeName(text: string): string {
  if (text === "") return EMPTY;
  let out = "";
  const bytes = Buffer.from(text, "utf8");
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i] as number;
    const ch = String.fromCharCode(b);
    if (b < 0x80 && KEEP.test(ch) && !(i === 0 && ch === ".")) out += ch;
    else out += `_${b.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

/** The text a name encodes, or undefined when the name is not one {@link encodeName} produces. */
export function decodeName(name: string): string | undefined {
  if (name === EMPTY) return "";
  if (name === "") return undefined;
  const bytes: number[] = [];
  for (let i = 0; i < name.length; ) {
    const ch = name[i] as string;
    if (ch === "_") {
      const hex = name.slice(i + 1, i + 3);
      if (!/^[0-9A-F]{2}$/.test(hex)) return undefined;
      bytes.push(Number.parseInt(hex, 16));
      i += 3;
    } else {
      bytes.push(ch.charCodeAt(0));
      i += 1;
    }
  }
  const text = Buffer.from(bytes).toString("utf8");
  // Only the canonical spelling decodes: rejects stray files, non-UTF-8 bytes and alternative escapes.
  return encodeName(text) === name ? text : undefined;
}
