/**
 * The checks every input reader shares: what an object is, and what a token id is. One id bound for all
 * readers (mask, check, merge, suites): ids are unsigned 32-bit, as the scanner's Uint32Array holds them;
 * whether an id is in the vocabulary is the scanner's question.
 */

export const MAX_TOKEN_ID = 0xffffffff;

/** A line (or row) that cannot be read as a rollout: the message names the field and index. */
export class ShapeError extends Error {}

/** A JSON object (not null, not an array). The one such check every reader uses. */
export const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** A JSON array of token ids, or an error naming `field` (a JSON path) and the index. */
export function tokenArray(value: unknown, field: string): number[] {
  if (!Array.isArray(value)) throw new ShapeError(`${field}: expected an array of token ids`);
  for (let i = 0; i < value.length; i++) {
    const id = value[i];
    if (typeof id !== 'number' || !Number.isInteger(id) || id < 0 || id > MAX_TOKEN_ID) {
      throw new ShapeError(`${field}[${i}]: expected a token id (an integer from 0 to ${MAX_TOKEN_ID}), got ${jsonText(id)}`);
    }
  }
  return value as number[];
}

const BIGINT_MARK = `\u0000bigint${Math.random().toString(36).slice(2)}:`;
/** The mark as JSON string text (its NUL escaped), to splice into a line. */
const MARK_QUOTED = JSON.stringify(BIGINT_MARK);
const BIGINT_QUOTED = new RegExp(`"${JSON.stringify(BIGINT_MARK).slice(1, -1).replace(/\\/g, '\\\\')}(-?\\d+)"`, 'g');

/**
 * JSON text of a value, with BigInts (INT64 from Parquet past 2^53) written as their exact digits, which
 * JSON.stringify refuses. Throws where JSON.stringify throws (a value nested too deeply).
 */
export function jsonText(value: unknown): string {
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' || value === null) return JSON.stringify(value);
  let big = false;
  const text = JSON.stringify(value, (_key, item: unknown) => {
    if (typeof item !== 'bigint') return item;
    big = true;
    return `${BIGINT_MARK}${item}`;
  });
  return big ? text.replace(BIGINT_QUOTED, '$1') : text;
}

/**
 * An integer literal of 16 digits or more, outside a fraction or exponent (which follow `.`, `e`, a sign or a
 * digit): the cheap test for a line that may hold an integer JSON.parse would round. A hit inside a string only
 * costs the exact parse.
 */
const LONG_INTEGER = /(?<![\w.+-])-?\d{16,}(?![\d.eE])/;

export const mayHoldBigInteger = (text: string): boolean => LONG_INTEGER.test(text);

/**
 * JSON.parse, except that an integer literal past 2^53 (which JSON.parse rounds: 2^53 + 1 reads as 2^53) is read as
 * the BigInt of its digits, so that `jsonText` writes it back exactly as it came. Throws where JSON.parse throws.
 */
export function parseJsonExact(text: string): unknown {
  if (!mayHoldBigInteger(text)) return JSON.parse(text);
  const pieces: string[] = [];
  let from = 0;
  let big = false;
  for (let at = 0; at < text.length;) {
    const c = text.charCodeAt(at);
    if (c === 0x22) {
      // A string: skip to its closing quote (a backslash escapes the next character).
      at++;
      while (at < text.length) {
        const d = text.charCodeAt(at);
        if (d === 0x5c) at += 2;
        else if (d === 0x22) break;
        else at++;
      }
      at++;
      continue;
    }
    if (c !== 0x2d && (c < 0x30 || c > 0x39)) { at++; continue; }
    const start = at;
    if (c === 0x2d) at++;
    while (at < text.length && text.charCodeAt(at) >= 0x30 && text.charCodeAt(at) <= 0x39) at++;
    const next = text.charCodeAt(at);
    if (next === 0x2e || next === 0x65 || next === 0x45) {
      // A fraction or an exponent: a double as written, whatever its digits.
      while (at < text.length && /[\d.eE+-]/.test(text[at])) at++;
      continue;
    }
    const literal = text.slice(start, at);
    if (literal.length >= 16 && !Number.isSafeInteger(Number(literal))) {
      pieces.push(text.slice(from, start), MARK_QUOTED.slice(0, -1), literal, '"');
      from = at;
      big = true;
    }
  }
  if (!big) return JSON.parse(text);
  pieces.push(text.slice(from));
  try {
    return JSON.parse(pieces.join(''), (_key, value: unknown) => (typeof value === 'string' && value.startsWith(BIGINT_MARK) ? BigInt(value.slice(BIGINT_MARK.length)) : value));
  } catch {
    // Invalid JSON: the error as JSON.parse words it for the line as written (positions unshifted).
    return JSON.parse(text);
  }
}
