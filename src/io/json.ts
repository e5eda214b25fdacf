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
      throw new ShapeError(`${field}[${i}]: expected a token id (an integer from 0 to ${MAX_TOKEN_ID}), got ${JSON.stringify(id)}`);
    }
  }
  return value as number[];
}

const BIGINT_MARK = `\u0000bigint${Math.random().toString(36).slice(2)}:`;
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
