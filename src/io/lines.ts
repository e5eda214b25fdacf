/**
 * Output lines: masks, check verdicts, datums and errors, one JSON object per line; ids written back as
 * they came, or the line fails.
 */
import type { MaskResult } from '../masker.ts';
import { jsonText } from './json.ts';

/** Where output text goes, a line at a time: a file's writer or a chunk's bytes (io/mask-lines.ts ByteOut). */
export interface TextOut {
  write(text: string): void;
  /** `[m0,m1,…]` for a 0/1 mask. */
  writeMask(mask: ArrayLike<number>): void;
  /** Bytes as they are (ASCII here), where the output takes them. */
  writeBytes?(bytes: Uint8Array): void;
}

/** A thrown value's message, whatever was thrown. */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** `id` as JSON; throws (a line error) when it cannot be written, e.g. nested thousands of levels deep. */
export function idJson(id: unknown): string {
  let text: string;
  try {
    text = jsonText(id ?? null) ?? 'null';
  } catch (error) {
    throw new Error(`"id" cannot be written back as JSON (${errorMessage(error)})`);
  }
  // JSON.parse reads an integer past 2^53 as the nearest double (2^53 + 1 comes back as 2^53): such an id
  // could be written back only changed, so its line fails instead. (A BigInt, as Parquet's INT64 gives, is exact.)
  if (typeof id === 'number' ? !safe(id) : typeof id === 'object' && id !== null && /\d{16}/.test(text)) {
    JSON.stringify(id, (_key, value: unknown) => {
      if (typeof value === 'number' && !safe(value)) throw new Error(`"id" holds an integer past 2^53 (read as ${value}): JSON numbers that large are read inexactly, so it cannot be written back as it came (give it as a string)`);
      return typeof value === 'bigint' ? null : value;
    });
  }
  return text;
}

const safe = (value: number) => !Number.isInteger(value) || Number.isSafeInteger(value);

/**
 * An id as text for people: a string as it is, a number or boolean as written, anything else as its JSON.
 * Ids are data: never their own `toString` or `valueOf` (`{"toString": 1}` would throw, a getter could lie).
 */
export function idText(id: unknown): string {
  if (typeof id === 'string') return id;
  if (typeof id === 'number' || typeof id === 'boolean' || typeof id === 'bigint') return `${id}`;
  if (id === undefined || id === null) return 'null';
  try {
    return JSON.stringify(id) ?? 'null';
  } catch {
    return '(an id that cannot be written)';
  }
}

/** The id itself when it can be written as JSON, else null. */
export function writable(id: unknown): unknown {
  try { idJson(id); return id; } catch { return null; }
}

/** The output line of a failed input line. Never throws: an id that cannot be written becomes null. */
export function errorLine(id: unknown, line: number, message: string): string {
  return `{"id":${jsonText(writable(id) ?? null)},"line":${line},"error":${JSON.stringify(message)}}\n`;
}

/** The id of a line that failed validation, if it can still be read. */
export function idOf(text: string): unknown {
  try {
    const value = JSON.parse(text);
    return typeof value === 'object' && value !== null ? (value as { id?: unknown }).id ?? null : null;
  } catch {
    return null;
  }
}

const tagJson = new Map<string, string>();

let idScratch = Buffer.allocUnsafe(1 << 16);

/**
 * `,"tokens":[i0,i1,…]`: digits written as bytes where the output takes bytes (a join makes each number a string
 * first, then the text is encoded again: ~5× the cost), the same text as JSON.stringify.
 */
function writeIds(writer: TextOut, tokens: ArrayLike<number>): void {
  const n = tokens.length;
  let plain = writer.writeBytes !== undefined;
  for (let i = 0; plain && i < n; i++) { const id = tokens[i]; plain = id >= 0 && id <= 0x7fffffff && (id | 0) === id; }
  if (!plain) { writer.write(`,"tokens":[${Array.prototype.join.call(tokens, ',')}]`); return; }
  if (idScratch.length < 11 * n + 16) idScratch = Buffer.allocUnsafe(11 * n + 16);
  const out = idScratch;
  let at = out.write(',"tokens":[', 0, 'latin1');
  for (let i = 0; i < n; i++) {
    if (i > 0) out[at++] = 0x2c;
    let value = tokens[i];
    let digits = 1;
    for (let rest = value; rest >= 10; rest = (rest / 10) | 0) digits++;
    at += digits;
    let back = at;
    do {
      const next = (value / 10) | 0;
      out[--back] = 0x30 + value - next * 10;
      value = next;
    } while (value > 0);
  }
  out[at++] = 0x5d;
  writer.writeBytes!(out.subarray(0, at));
}

/** The output line, written piece by piece: the same JSON as JSON.stringify, without building the object twice. `id` is already JSON. */
export function writeMaskLine(writer: TextOut, id: string, result: MaskResult, tokens?: ArrayLike<number>) {
  writer.write(`{"id":${id},"mask":`);
  writer.writeMask(result.mask);
  // The ids of a rollout tokenized here (text, messages), after the mask as maskFields puts them.
  if (tokens) writeIds(writer, tokens);
  let spans = ',"spans":[';
  let first = true;
  for (const span of result.spans) {
    let tag = tagJson.get(span.tag);
    if (tag === undefined) { tag = JSON.stringify(span.tag); tagJson.set(span.tag, tag); }
    const attrs = span.attrs ? `,"attrs":${JSON.stringify(span.attrs)}` : '';
    spans += `${first ? '' : ','}{"role":"${span.role}","tag":${tag},"start":${span.start},"end":${span.end}${attrs}}`;
    first = false;
    // A rollout with a million spans: hand them over in pieces rather than as one huge string.
    if (spans.length > 1 << 16) { writer.write(spans); spans = ''; }
  }
  writer.write(`${spans}],"diagnostics":[`);
  const diagnostics = result.diagnostics;
  for (let i = 0; i < diagnostics.length; i++) writer.write(`${i ? ',' : ''}${JSON.stringify(diagnostics[i])}`);
  writer.write(']}\n');
}
