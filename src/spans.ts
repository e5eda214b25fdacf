/**
 * Segments (byte-exact state starts) → token spans that tile [0, n) → the 0/1 mask.
 *
 * A state that begins inside a token makes that token belong to two sides. Between two kinds of the
 * same role it goes to the earlier span; across an action/observation boundary it is a straddling
 * token: reported, and given the side whose mask equals the `straddle` option (default 0).
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

/** Token index where each segment's tokens start; straddles are reported into `segments.diagnostics`. */
function segmentStarts(bound: Bound, ids: ArrayLike<number>, segments: Segments, reportStraddles: boolean): Int32Array {
  const { stateMask, straddleMask } = bound;
  const starts = segments.starts;
  let lastStraddle = -1;
  for (let j = 0; j < segments.count; j++) {
    const token = segments.token[j];
    let start = token;
    if (segments.offset[j] > 0) {
      const before = stateMask[segments.state[j - 1]];
      const after = stateMask[segments.state[j]];
      if (before === after) start = token + 1;
      else {
        start = after === straddleMask ? token : token + 1;
        if (reportStraddles && token !== lastStraddle) {
          lastStraddle = token;
          segments.diagnostics.push({
            code: 'straddling-token',
            severity: SEVERITY['straddling-token'],
            token,
            message: segments.messages
              ? `token ${token} (${JSON.stringify(textOf(bound.table, ids, token, token + 1))}) crosses the boundary between ${before ? 'action' : 'observation'} and ${after ? 'action' : 'observation'} at byte ${segments.offset[j]}; it gets mask ${straddleMask} (option straddle)`
              : '',
          });
        }
      }
    }
    starts[j] = j > 0 && start < starts[j - 1] ? starts[j - 1] : start;
  }
  return starts;
}

/** Write the mask of one rollout into `mask` (length = token count). The hot path: no objects per span. */
export function fillMask(bound: Bound, ids: ArrayLike<number>, segments: Segments, mask: Uint8Array): void {
  const starts = segmentStarts(bound, ids, segments, true);
  const n = ids.length;
  for (let j = 0; j < segments.count; j++) {
    const end = j + 1 < segments.count ? starts[j + 1] : n;
    if (end > starts[j]) mask.fill(bound.stateMask[segments.state[j]], starts[j], end);
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
