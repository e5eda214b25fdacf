/**
 * Segments (byte-exact state starts) → token spans that tile [0, n) → the 0/1 mask.
 *
 * A state that begins inside a token makes that token belong to two sides. Between two kinds of the
 * same role it goes to the earlier span; across an action/observation boundary it is a straddling
 * token: reported, and given the side whose mask equals the `straddle` option (default 0).
 * Every token gets exactly one span, so spans tile [0, n) and the mask is read off the spans.
 */
import type { Bound, Segments } from './scan.ts';
import { SEVERITY } from './diagnostics.ts';
import { textOf } from './tokenizer/table.ts';

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
 * Token index where each segment's tokens start; straddles are reported into `segments.diagnostics`.
 *
 * The segments that begin inside one token t, with the one already running at its first byte, share it.
 * Only those holding at least one of its bytes count: a state entered and left at the same byte (an empty
 * model turn) owns nothing. If they all have one mask value, the token goes to the running segment;
 * otherwise it straddles, takes the value of option `straddle`, and goes to the first sharer with that value.
 */
function segmentStarts(bound: Bound, ids: ArrayLike<number>, segments: Segments, reportStraddles: boolean): Int32Array {
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
      if (reportStraddles) {
        const sides = [];
        for (let m = j - 1; m < k; m++) if (m === j - 1 || holdsByte(segments, m)) sides.push(stateMask[state[m]] === 1 ? 'action' : 'observation');
        segments.diagnostics.push({
          code: 'straddling-token',
          severity: SEVERITY['straddling-token'],
          token: t,
          message: segments.messages
            ? `token ${t} (${JSON.stringify(textOf(bound.table, ids, t, t + 1))}) holds bytes of ${sides.join(' then ')}; it gets mask ${straddleMask} (option straddle)`
            : '',
        });
      }
    }
    for (let m = j; m < k; m++) starts[m] = m <= owner ? t : t + 1;
    j = k;
  }
  return starts;
}

/**
 * Write the mask of one rollout into `mask[at .. at + token count)`. The hot path: no objects per span;
 * short runs are written by a loop, since `fill` costs more than a few stores.
 */
export function fillMask(bound: Bound, ids: ArrayLike<number>, segments: Segments, mask: Uint8Array, at = 0): void {
  const starts = segmentStarts(bound, ids, segments, true);
  const n = ids.length;
  const { stateMask } = bound;
  for (let j = 0; j < segments.count; j++) {
    const start = at + starts[j];
    const end = at + (j + 1 < segments.count ? starts[j + 1] : n);
    const value = stateMask[segments.state[j]];
    if (end - start > 32) mask.fill(value, start, end);
    else for (let i = start; i < end; i++) mask[i] = value;
  }
}

/** The spans of one rollout: consecutive, non-empty, tiling [0, n), same-kind neighbours merged. */
export function buildSpans(bound: Bound, ids: ArrayLike<number>, segments: Segments): Span[] {
  const starts = segmentStarts(bound, ids, segments, false);
  const { states } = bound.grammar;
  const spans: Span[] = [];
  const n = ids.length;
  for (let j = 0; j < segments.count; j++) {
    const end = j + 1 < segments.count ? starts[j + 1] : n;
    if (end <= starts[j]) continue;
    const state = segments.state[j];
    const role = bound.stateMask[state] === 1 ? 'action' : 'observation';
    const tag = states[state].kind;
    const attrs = segments.attributes.get(j);
    const previous = spans[spans.length - 1];
    if (previous && !attrs && previous.role === role && previous.tag === tag) previous.end = end;
    else spans.push(attrs ? { role, tag, start: starts[j], end, attrs } : { role, tag, start: starts[j], end });
  }
  return spans;
}
