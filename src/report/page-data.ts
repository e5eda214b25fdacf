/**
 * The HTML page's data block: what src/report/html.ts writes into `<script type="application/json">` and what
 * the page's script (src/report/page/) reads back. One type for both sides, so a key renamed or a field changed
 * on one side fails the type-check of the other. Types only: the browser bundle and Node both import it.
 *
 * The keys of a rollout are one or two letters: a page holds up to 10,000 rollouts, and each key is written once
 * per rollout. Lists of pairs and triples are flat or tuples for the same reason.
 */

/** The whole block. */
export interface PageData {
  title: string;
  /** The audited side's name: `given` (check), `construction` or `merge` (conformance). */
  side: string;
  /** Disagreement classes; a run's `x[0]` indexes this list. */
  classes: string[];
  /** The two directions of a disagreement: [given 1 / protocol 0, given 0 / protocol 1]. */
  directions: [up: string, down: string];
  /** The 64 characters of the token code (see PageRollout.t), in digit order. */
  alphabet: string;
  /** Each distinct token piece once, its bytes in base64 (empty for an id outside the vocabulary). */
  pieces: string[];
  /** Per piece, its token id. */
  ids: number[];
  /** Pieces that are special tokens. */
  special: number[];
  /** Pieces whose id is not in the vocabulary. */
  unknown: number[];
  /** Span kinds `a:tag` (action) or `o:tag` (observation); PageRollout.s indexes this list. */
  kinds: string[];
  /** Diagnostic codes `severity:code`; PageRollout.d indexes this list. */
  codes: string[];
  /** Groups (conformance: suite and check); PageRollout.g indexes this list. */
  groups: string[];
  rollouts: PageRollout[];
}

/** A diagnostic: [index into PageData.codes, token, message]. */
export type PageDiagnostic = [code: number, token: number, message: string];

/**
 * A disagreement run: [index into PageData.classes, start, end (exclusive), the audited mask's value on it, what it
 * does in words (its parts, and the cause where the stream departs from the template), its parts' codes].
 */
export type PageRun = [cls: number, start: number, end: number, given: 0 | 1, words?: string, parts?: string[]];

/** One rollout. */
export interface PageRollout {
  /** Its id as text; '' when it has none. */
  i: string;
  /** Its group (index into PageData.groups). */
  g?: number;
  /** Where it came from (`file:line`). */
  src?: string;
  /**
   * Its tokens as indices into PageData.pieces, a little-endian base-32 code: each character (of the alphabet)
   * carries 5 bits, and the 32 bit says another character follows.
   */
  t: string;
  /** Its spans as (index into PageData.kinds, length in tokens) pairs, flat, in order from token 0. */
  s?: number[];
  /** Attributes of spans, by span index. */
  a?: Record<number, Record<string, string>>;
  d?: PageDiagnostic[];
  /** 1 when the audited mask is in target space (one shorter than the tokens: value i is for token i + 1). */
  f?: 1;
  /** The audited mask as alternating run lengths, starting with a run of 0s (possibly empty). */
  m?: number[];
  /** The audited side's name, when not PageData.side. */
  sd?: string;
  x?: PageRun[];
  /** The pattern the whole audited mask follows: [code, words]. */
  p?: [code: string, words: string];
  /** Option values under which the audited mask agrees fully (`template_think=0`). */
  h?: string[];
  /** Why it could not be masked. */
  e?: string;
  /** Free notes shown with it. */
  n?: string[];
}
