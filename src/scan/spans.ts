/**
 * Segments (byte-exact state starts) → token spans that tile [0, n) → the 0/1 mask.
 *
 * A state that begins inside a token makes that token belong to two sides. Between two kinds of the
 * same role it goes to the earlier span; across an action/observation boundary it is a straddling
 * token: reported, and given the side whose mask equals the `straddle` option (default 0).
 * Every token gets exactly one span, so spans tile [0, n) and the mask is read off the spans.
 */
import type { Bound } from './bind.ts';
import type { Segments } from './segments.ts';
import { readAttributes } from './attributes.ts';
import { pieceOf } from '../tokenizer/table.ts';

export interface Span {
  role: 'action' | 'observation';
  /** The kind: `prompt`, a tag name, `text`, a reply name, or `trailing`. */
  tag: string;
  start: number;
  /** Exclusive. */
  end: number;
  /** Attributes of the tag that opens the span (tags declared with `attributes`: `<invoke name="…">`). */
  attrs?: Record<string, string>;
}

/** Does segment m hold at least one byte (it does not end where it begins)? */
function holdsByte(segments: Segments, m: number): boolean {
  return !(m + 1 < segments.count && segments.token[m + 1] === segments.token[m] && segments.offset[m + 1] === segments.offset[m]);
}

/**
 * Token index where each segment's tokens start; straddles are noted into `segments.records`.
 *
 * The segments that begin inside one token t, with the one already running at its first byte, share it.
 * Only those holding at least one of its bytes count: a state entered and left at the same byte (an empty
 * model turn) owns nothing. If they all have one mask value, the token goes to the running segment;
 * otherwise it straddles, takes the value of option `straddle`, and goes to the first sharer with that value.
 */
export function segmentStarts(bound: Bound, segments: Segments): Int32Array {
  const { stateMask, straddleMask } = bound;
  const { count, token, offset, state } = segments;
  const starts = segments.starts;
  if (count > 0) starts[0] = token[0];
  let j = 1;
  while (j < count) {
    const t = token[j];
    if (offset[j] === 0) { starts[j] = t; j++; continue; }
    let k = j;
    while (k < count && token[k] === t && offset[k] > 0) k++;
    // Sharers of token t: the running segment j - 1, and each of j..k-1 that holds a byte of it.
    let mixed = false;
    for (let m = j; m < k; m++) if (holdsByte(segments, m) && stateMask[state[m]] !== stateMask[state[j - 1]]) mixed = true;
    let owner = j - 1;
    if (mixed) {
      for (let m = j - 1; m < k; m++) if ((m === j - 1 || holdsByte(segments, m)) && stateMask[state[m]] === straddleMask) { owner = m; break; }
      // The sides in reverse byte order, so the first ends up in bit 0 (see ScanRecord.sides).
      let sides = 1;
      for (let m = k - 1; m >= j - 1; m--) if (m === j - 1 || holdsByte(segments, m)) sides = (sides << 1) | stateMask[state[m]];
      // Where the token's bytes first change side: the first sharer holding a byte with another mask value.
      let split = j;
      while (!(holdsByte(segments, split) && stateMask[state[split]] !== stateMask[state[j - 1]])) split++;
      segments.note('straddling-token', t, -1, straddleMask, sides, segments.offset[split]);
    }
    for (let m = j; m < k; m++) starts[m] = m <= owner ? t : t + 1;
    j = k;
  }
  return starts;
}

/**
 * Write the mask of one rollout (`n` tokens, segment starts from `segmentStarts`) into
 * `mask[at .. at + n)`. The hot path: no objects per span; short runs are written by a loop, since `fill`
 * costs more than a few stores. Returns whether any token got mask 1.
 */
export function fillMask(bound: Bound, segments: Segments, starts: Int32Array, n: number, mask: Uint8Array, at = 0): boolean {
  const { stateMask } = bound;
  let any = false;
  for (let j = 0; j < segments.count; j++) {
    const start = at + starts[j];
    const end = at + (j + 1 < segments.count ? starts[j + 1] : n);
    const value = stateMask[segments.state[j]];
    if (value === 1 && end > start) any = true;
    if (end - start > 32) mask.fill(value, start, end);
    else for (let i = start; i < end; i++) mask[i] = value;
  }
  return any;
}

/** The spans of one rollout: consecutive, non-empty, tiling [0, n), same-kind neighbours merged. */
export function buildSpans(bound: Bound, ids: ArrayLike<number>, segments: Segments, starts: Int32Array): Span[] {
  const attributes = readTagAttributes(bound, ids, segments);
  const { states } = bound.grammar;
  const spans: Span[] = [];
  const n = ids.length;
  for (let j = 0; j < segments.count; j++) {
    const end = j + 1 < segments.count ? starts[j + 1] : n;
    if (end <= starts[j]) continue;
    const state = segments.state[j];
    const role = bound.stateMask[state] === 1 ? 'action' : 'observation';
    const tag = states[state].kind;
    const attrs = attributes?.get(j);
    const previous = spans[spans.length - 1];
    if (previous && !attrs && previous.role === role && previous.tag === tag) previous.end = end;
    else spans.push(attrs ? { role, tag, start: starts[j], end, attrs } : { role, tag, start: starts[j], end });
  }
  return spans;
}

/** The attributes of the tags the scan delimited (`<invoke name="search">`), by the segment each opens. */
function readTagAttributes(bound: Bound, ids: ArrayLike<number>, segments: Segments): Map<number, Record<string, string>> | undefined {
  const ranges = segments.tagRanges;
  if (ranges.length === 0) return undefined;
  const attributes = new Map<number, Record<string, string>>();
  const decoder = new TextDecoder();
  for (let at = 0; at < ranges.length; at += 5) {
    const [segment, fromToken, fromOffset, toToken, toOffset] = ranges.slice(at, at + 5);
    const bytes: number[] = [];
    for (let t = fromToken; t <= toToken; t++) {
      const piece = pieceOf(bound.table, ids[t]);
      // Offsets are the scanner's: a special token is one byte there, so its edge (0 or 1) is its start or end.
      const scanLength = pieceOf(bound.scan, ids[t]).length;
      const at = (offset: number) => (scanLength === piece.length || offset === 0 ? offset : piece.length);
      bytes.push(...piece.subarray(t === fromToken ? at(fromOffset) : 0, t === toToken ? at(toOffset) : piece.length));
    }
    // Read under a neutral name: HTML parsing rules for names like <tr> or <title> would drop the element.
    attributes.set(segment, readAttributes(`<span${decoder.decode(Uint8Array.from(bytes))}`));
  }
  return attributes;
}
