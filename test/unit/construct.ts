/**
 * Test helpers: build Search-R1 rollouts the way Search-R1 does (each piece tokenized on its own with the
 * real tokenizer, then concatenated) so the expected mask is known by construction, and check the masker's
 * structural promises (spans tile [0, n), mask equals span roles).
 *
 * Search-R1 facts (PeterGriffinJin/Search-R1, search_r1/llm_agent/generation.py), restated here from the
 * source so the tests do not lean on the grammar file they test:
 *  - the observation after a search is f'\n\n<information>{results.strip()}</information>\n\n'
 *  - a turn with neither a search nor an answer gets INVALID_ACTION below
 *  - each turn is cut after the first </search>, else after the first </answer>
 */
import { expect } from 'vitest';
import type { Span } from '../../src/index.ts';

export const INVALID_ACTION =
  '\nMy previous action is invalid. ' +
  'If I want to search, I should put the query between <search> and </search>. ' +
  'If I want to give the final answer, I should put the answer between <answer> and </answer>. Let me try again.\n';

export const information = (results: string) => `\n\n<information>${results.trim()}</information>\n\n`;

/** A Search-R1-style user message that quotes every tag of the protocol. */
export const userMessage = (question: string) =>
  'Answer the given question. You must conduct reasoning inside <think> and </think> first every time you get new information. ' +
  'After reasoning, if you find you lack some knowledge, you can call a search engine by <search> query </search> and it will return the top searched results between <information> and </information>. ' +
  'If you find no further external knowledge needed, you can directly provide the answer inside <answer> and </answer>, without detailed illustrations. For example, <answer> Beijing </answer>. ' +
  `Question: ${question}\n`;

export type Role = 'prompt' | 'action' | 'observation' | 'padding';

export interface Piece {
  role: Role;
  text?: string;
  /** Ids given directly (a cut observation, padding). */
  ids?: number[];
}

export interface Built {
  ids: number[];
  /** By construction: 1 for action tokens, 0 for everything else. */
  expected: number[];
  /** Token range of each piece, in order. */
  ranges: Array<{ role: Role; start: number; end: number }>;
}

export type Encode = (text: string) => number[];

/**
 * A Search-R1 rollout of two searches (who wrote Dune, then the author), each turn's text as the sampler returned it
 * and each information block on its own: what Search-R1's generation.py concatenates.
 */
export const DUNE_PIECES: Piece[] = [
  { role: 'prompt', text: `<|im_start|>user\n${userMessage('Who wrote Dune?')}<|im_end|>\n<|im_start|>assistant\n` },
  { role: 'action', text: '<think>I should search.</think>\n<search> Dune author </search>' },
  { role: 'observation', text: information('Doc 1 (Title: Dune) Dune is a 1965 novel by Frank Herbert.') },
  { role: 'action', text: '<think>Frank Herbert wrote it. Check him.</think>\n<search> Frank Herbert </search>' },
  { role: 'observation', text: information('Doc 1 (Title: Frank Herbert) American author.') },
  { role: 'action', text: '<think>Done.</think>\n<answer> Frank Herbert </answer>' },
];

export function build(encode: Encode, pieces: Piece[]): Built {
  const ids: number[] = [];
  const expected: number[] = [];
  const ranges: Built['ranges'] = [];
  for (const piece of pieces) {
    const pieceIds = piece.ids ?? encode(piece.text ?? '');
    ranges.push({ role: piece.role, start: ids.length, end: ids.length + pieceIds.length });
    for (const id of pieceIds) {
      ids.push(id);
      expected.push(piece.role === 'action' ? 1 : 0);
    }
  }
  return { ids, expected, ranges };
}

/** Spans tile [0, n) without gaps or overlaps, are non-empty, and the mask is 1 exactly on action spans. */
export function expectSpansTile(spans: Span[], mask: ArrayLike<number>, n: number): void {
  expect(mask.length).toBe(n);
  if (n === 0) {
    expect(spans).toEqual([]);
    return;
  }
  expect(spans.length).toBeGreaterThan(0);
  expect(spans[0].start).toBe(0);
  expect(spans[spans.length - 1].end).toBe(n);
  for (let i = 0; i < spans.length; i++) {
    const span = spans[i];
    expect(span.end).toBeGreaterThan(span.start);
    if (i > 0) expect(span.start).toBe(spans[i - 1].end);
    const want = span.role === 'action' ? 1 : 0;
    for (let t = span.start; t < span.end; t++) {
      if (mask[t] !== want) throw new Error(`token ${t}: mask ${mask[t]} inside ${span.role} span ${JSON.stringify(span)}`);
    }
  }
}

/** Indices where two masks differ (readable failure output). */
export function differences(actual: ArrayLike<number>, expected: ArrayLike<number>): number[] {
  const out: number[] = [];
  const n = Math.max(actual.length, expected.length);
  for (let i = 0; i < n; i++) if (actual[i] !== expected[i]) out.push(i);
  return out;
}
