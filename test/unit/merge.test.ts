import { describe, it, expect } from 'vitest';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { PreTrainedTokenizer } from '@huggingface/transformers';
import {
  PARSE_ERROR_MASKED_METRIC_KEY,
  auditExtension,
  trajectoryToData as typedTrajectoryToData,
  type Datum,
  type Trajectory,
  type Transition,
} from '../../src/merge.ts';
import { datumJsonLine, parseTrajectoryLine } from '../../src/io/trajectory.ts';

// Every expected array below is written by hand (or, for tutorial 404, copied
// from the tutorial's printed output in samples/tutorial-404/expected.json);
// none is produced by the code under test.

const sampleDir = fileURLToPath(new URL('../../samples/tutorial-404/', import.meta.url));
const readSample = (name: string): string => readFileSync(sampleDir + name, 'utf8');

/** A datum as plain arrays (the expectations below are written as such), without the unshifted `sequence`. */
const plain = ({ sequence: _, ...datum }: Datum) => ({
  ...datum,
  tokens: Array.from(datum.tokens),
  target_tokens: Array.from(datum.target_tokens),
  logprobs: Array.from(datum.logprobs),
  advantages: Array.from(datum.advantages),
  mask: Array.from(datum.mask),
});
const trajectoryToData = (...args: Parameters<typeof typedTrajectoryToData>) => typedTrajectoryToData(...args).map(plain);

function t(
  ob: number[],
  tokens: number[],
  extra: Partial<Omit<Transition, 'ob' | 'ac'>> & { logprobs?: number[] } = {},
): Transition {
  const { logprobs, ...rest } = extra;
  return { ob, ac: { tokens, logprobs: logprobs ?? tokens.map(() => 0) }, ...rest };
}

describe('tutorial 404 (printed outputs of tinker-cookbook tutorials/404_sequence_extension.py)', () => {
  const expected = JSON.parse(readSample('expected.json'));
  const lines = readSample('trajectories.jsonl')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line, i) => parseTrajectoryLine(JSON.parse(line), `trajectories.jsonl:${i + 1}`));
  const byId = new Map(lines.map((line) => [line.id, line]));

  it('extend: all observations extend, one datum', () => {
    const { trajectory, advantage } = byId.get('extend')!;
    const data = trajectoryToData(trajectory, advantage);
    const e = expected.extend;
    expect(data.length).toBe(e.datums);
    const [datum] = data;
    expect(datum.tokens.length).toBe(e.total_tokens); // model_input.length
    expect(datum.mask).toEqual(e.mask);
    expect(datum.advantages).toEqual(e.advantages);
    expect(datum.mask.filter((m) => m === 1).length).toBe(e.action_tokens);
    expect(datum.mask.filter((m) => m === 0).length).toBe(e.prompt_tokens);
    // Beyond the printed numbers: the full layout, by hand.
    expect(datum.tokens).toEqual([100, 101, 102, 103, 200, 201, 300, 301, 400, 401, 402, 500, 600]);
    expect(datum.target_tokens).toEqual([101, 102, 103, 200, 201, 300, 301, 400, 401, 402, 500, 600, 601]);
    // tinker's datums are float32 tensors: the sampled logprobs come back rounded to float32.
    expect(datum.logprobs).toEqual([0, 0, 0, -0.5, -0.3, 0, 0, -0.4, -0.2, -0.1, 0, -0.6, -0.3].map(Math.fround));
    expect(datum.firstObservationLength).toBe(4);
    expect([datum.transitionStart, datum.transitionEnd]).toEqual([0, 3]);
  });

  it('split: the second observation is a new context, two datums', () => {
    const { trajectory, advantage } = byId.get('split')!;
    const data = trajectoryToData(trajectory, advantage);
    const e = expected.split;
    expect(data.length).toBe(e.datums);
    expect(data.map((d) => d.tokens.length)).toEqual(e.datum_lengths);
    expect(data.map((d) => d.mask)).toEqual(e.masks);
    expect(data.map((d) => d.target_tokens)).toEqual([
      [101, 200, 201],
      [301, 302, 400, 401],
    ]);
    expect(data.map((d) => [d.transitionStart, d.transitionEnd])).toEqual([
      [0, 1],
      [1, 2],
    ]);
  });

  it('datumJsonLine emits the output line shape with plain numbers', () => {
    const { id, trajectory } = byId.get('split')!;
    const [first] = typedTrajectoryToData(trajectory, 1);
    expect(datumJsonLine(JSON.stringify(id), 0, first)).toBe(
      '{"id":"split","datum":0,"tokens":[100,101,200],"target_tokens":[101,200,201],' +
        // -0.3 in float32, as tinker's tensor gives it back.
        '"logprobs":[0,-0.5,-0.30000001192092896],"advantages":[0,1,1],"mask":[0,1,1]}\n',
    );
  });

  it('the one-token shift is a view: tokens and target_tokens are the unshifted sequence less one end', () => {
    const { trajectory } = byId.get('split')!;
    const [first] = typedTrajectoryToData(trajectory, 1);
    expect(Array.from(first.sequence)).toEqual([100, 101, 200, 201]);
    expect(first.tokens.buffer).toBe(first.sequence.buffer);
    expect(first.target_tokens.buffer).toBe(first.sequence.buffer);
    expect(first.tokens.byteOffset).toBe(first.sequence.byteOffset);
    expect(first.target_tokens.byteOffset).toBe(first.sequence.byteOffset + 4);
  });

  it('an id a token array cannot hold is an error naming its place, not a wrapped number', () => {
    expect(() => typedTrajectoryToData({ transitions: [t([1, 2], [3]), t([1, 2, 3, -1], [4])] })).toThrow(/transitions\[1\]\.ob\[3\]: expected a token id.*got -1/);
    expect(() => typedTrajectoryToData({ transitions: [t([1, 2], [2 ** 32])] })).toThrow(/transitions\[0\]\.ac\.tokens\[0\]/);
    expect(() => typedTrajectoryToData({ transitions: [t([1, 2], [1.5])] })).toThrow(/transitions\[0\]\.ac\.tokens\[0\]/);
  });
});

describe('tutorial 404 tokenizer', () => {
  // id -> exact decoded text. 200 is " 5" (not "5") and the three turn ends
  // differ by their leading whitespace, because a vocabulary needs one
  // distinct string per id and the tutorial reuses "5" and "<|end|>".
  const table: Array<[number, string]> = [
    [100, 'What'],
    [101, ' is'],
    [102, ' 2+3?'],
    [103, '\n'],
    [200, ' 5'],
    [201, ' <|end|>'],
    [300, '<obs>Correct!'],
    [301, ' Now what is 5*3?</obs>'],
    [302, ' Go on.'],
    [400, '1'],
    [401, '5'],
    [402, '<|end|>'],
    [500, '<obs>Right! Final: 15+1?</obs>'],
    [600, '16'],
    [601, '\n<|end|>'],
  ];
  const tokenizer = new PreTrainedTokenizer(
    JSON.parse(readSample('tokenizer.json')),
    JSON.parse(readSample('tokenizer_config.json')),
  );

  it('decodes every piece exactly, offline, from a sparse vocabulary', () => {
    for (const [id, text] of table) expect(tokenizer.decode([id])).toBe(text);
    expect(new Set(table.map(([, text]) => text)).size).toBe(table.length);
    expect(tokenizer.decode([7])).toBe('<unk>'); // ids not listed are absent
  });

  // Three fake stop ids whose text ends in <|end|>. They are added tokens but not special: a special token
  // matches a grammar literal only by its own id, and the tutorial grammar must hear <|end|> in all three.
  it('every action ends with <|end|>, an added token that is not special', () => {
    for (const id of [201, 402, 601]) {
      expect(tokenizer.decode([id]).endsWith('<|end|>')).toBe(true);
      expect(tokenizer.all_special_ids).not.toContain(id);
    }
  });

  it('reads the merged tutorial stream as text', () => {
    const stream = [100, 101, 102, 103, 200, 201, 300, 301, 400, 401, 402, 500, 600, 601];
    expect(tokenizer.decode(stream)).toBe(
      'What is 2+3?\n 5 <|end|><obs>Correct! Now what is 5*3?</obs>15<|end|>' +
        '<obs>Right! Final: 15+1?</obs>16\n<|end|>',
    );
  });
});

describe('trajectoryToData', () => {
  // Same layout as tinker-cookbook's multiturn_weight_assignment_test.py.
  const threeTurns = (): Trajectory => ({
    transitions: [
      t([1, 2, 3, 4, 5], [10, 11, 12]),
      t([1, 2, 3, 4, 5, 10, 11, 12, 20, 21], [30, 31]),
      t([1, 2, 3, 4, 5, 10, 11, 12, 20, 21, 30, 31, 40], [50, 51, 52], { episode_done: true }),
    ],
  });

  it('masks and zeroes the advantage of a parse-error turn only', () => {
    const trajectory = threeTurns();
    trajectory.transitions[1].metrics = { [PARSE_ERROR_MASKED_METRIC_KEY]: 1 };
    const [datum] = trajectoryToData(trajectory, 2);
    expect(datum.target_tokens).toEqual([2, 3, 4, 5, 10, 11, 12, 20, 21, 30, 31, 40, 50, 51, 52]);
    expect(datum.mask).toEqual([0, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 1]);
    expect(datum.advantages).toEqual([0, 0, 0, 0, 2, 2, 2, 0, 0, 0, 0, 0, 2, 2, 2]);
  });

  it('uses tinker’s ">= 1" test on the metric value', () => {
    const below = threeTurns();
    below.transitions[2].metrics = { [PARSE_ERROR_MASKED_METRIC_KEY]: 0.5 };
    expect(trajectoryToData(below)[0].mask).toEqual([0, 0, 0, 0, 1, 1, 1, 0, 0, 1, 1, 0, 1, 1, 1]);
    const above = threeTurns();
    above.transitions[2].metrics = { [PARSE_ERROR_MASKED_METRIC_KEY]: 2, other: 5 };
    expect(trajectoryToData(above)[0].mask).toEqual([0, 0, 0, 0, 1, 1, 1, 0, 0, 1, 1, 0, 0, 0, 0]);
  });

  it('an empty action adds nothing; the next observation extends past it', () => {
    const trajectory: Trajectory = {
      transitions: [t([1, 2, 3], []), t([1, 2, 3, 4], [5, 6], { logprobs: [-1, -2] })],
    };
    const data = trajectoryToData(trajectory, 0.5);
    expect(data).toEqual([
      {
        tokens: [1, 2, 3, 4, 5],
        target_tokens: [2, 3, 4, 5, 6],
        logprobs: [0, 0, 0, -1, -2],
        advantages: [0, 0, 0, 0.5, 0.5],
        mask: [0, 0, 0, 1, 1],
        firstObservationLength: 3,
        transitionStart: 0,
        transitionEnd: 2,
      },
    ]);
  });

  it('an empty observation after tokens splits, and the shift drops its first action token', () => {
    const trajectory: Trajectory = {
      transitions: [t([1, 2], [3]), t([], [4, 5], { logprobs: [-1, -2] })],
    };
    const data = trajectoryToData(trajectory);
    expect(data.map((d) => [d.tokens, d.target_tokens, d.logprobs, d.mask, d.firstObservationLength])).toEqual([
      [[1, 2], [2, 3], [0, 0], [0, 1], 2],
      [[4], [5], [-2], [1], 0],
    ]);
  });

  it('emits nothing for empty sequences and rejects a 1-token sequence like tinker', () => {
    expect(trajectoryToData({ transitions: [] })).toEqual([]);
    expect(trajectoryToData({ transitions: [t([], [])] })).toEqual([]);
    expect(() => trajectoryToData({ transitions: [t([7], [])] })).toThrow(/at least 2 tokens/);
  });

  it('raises on missing logprobs like tinker, unless asked for zeros', () => {
    const trajectory: Trajectory = { transitions: [{ ob: [1, 2], ac: { tokens: [3] } }] };
    expect(() => trajectoryToData(trajectory)).toThrow(/transitions\[0\]\.ac: logprobs are not available/);
    expect(trajectoryToData(trajectory, 1, { missingLogprobs: 'zero' })[0].logprobs).toEqual([0, 0]);
  });

  it('a non-extension in the middle gives 3 datums', () => {
    const trajectory: Trajectory = {
      transitions: [
        t([1, 2], [3, 4], { logprobs: [-1, -2] }),
        t([1, 2, 3, 4, 5], [6], { logprobs: [-3] }), // extends
        t([9, 9], [7], { logprobs: [-4] }), // new context
        t([1, 2, 3], [8], { logprobs: [-5] }), // not an extension of [9, 9, 7]
        t([1, 2, 3, 8, 10], [11], { logprobs: [-6] }), // extends
      ],
    };
    const data = trajectoryToData(trajectory, -0.5);
    expect(data).toEqual([
      {
        tokens: [1, 2, 3, 4, 5],
        target_tokens: [2, 3, 4, 5, 6],
        logprobs: [0, -1, -2, 0, -3],
        advantages: [0, -0.5, -0.5, 0, -0.5],
        mask: [0, 1, 1, 0, 1],
        firstObservationLength: 2,
        transitionStart: 0,
        transitionEnd: 2,
      },
      {
        tokens: [9, 9],
        target_tokens: [9, 7],
        logprobs: [0, -4],
        advantages: [0, -0.5],
        mask: [0, 1],
        firstObservationLength: 2,
        transitionStart: 2,
        transitionEnd: 3,
      },
      {
        tokens: [1, 2, 3, 8, 10],
        target_tokens: [2, 3, 8, 10, 11],
        logprobs: [0, 0, -5, 0, -6],
        advantages: [0, 0, -0.5, 0, -0.5],
        mask: [0, 0, 1, 0, 1],
        firstObservationLength: 3,
        transitionStart: 3,
        transitionEnd: 5,
      },
    ]);
  });

  it('handles a 1000-turn trajectory (one datum when extending, one per turn when not)', () => {
    const turns = 1000;
    const extending: Transition[] = [];
    const full: number[] = [0];
    for (let k = 0; k < turns; k++) {
      extending.push(t(full.slice(), [1000 + k, 2000 + k]));
      full.push(1000 + k, 2000 + k, 3000 + k); // action, then one new observation token
    }
    const merged = trajectoryToData({ transitions: extending });
    expect(merged.length).toBe(1);
    // 1 prompt token + per turn 2 action tokens, plus 1 observation token for turns 1..999.
    const length = 1 + 2 * turns + (turns - 1);
    expect(merged[0].tokens.length).toBe(length - 1);
    expect(merged[0].mask.reduce((a, b) => a + b, 0)).toBe(2 * turns);
    expect(merged[0].mask.slice(0, 6)).toEqual([1, 1, 0, 1, 1, 0]);

    const splitting = Array.from({ length: turns }, (_, k) => t([5000 + k], [6000 + k]));
    const data = trajectoryToData({ transitions: splitting });
    expect(data.length).toBe(turns);
    expect(data[999]).toMatchObject({ tokens: [5999], target_tokens: [6999], mask: [1], transitionStart: 999 });
  });
});

describe('auditExtension', () => {
  it('reports each split with the transition index and departure position', () => {
    const audit = auditExtension({
      transitions: [
        t([1, 2], [3, 4]),
        t([1, 2, 3, 4, 5], [6]), // extends
        t([1, 2, 3, 4, 9, 10], [11]), // departs at 4: expected 5, 6
        t([1, 2], []), // just shorter than [1,2,3,4,9,10,11]
        t([1, 2, 7], [8]), // extends [1, 2]
      ],
    });
    expect(audit.splits).toEqual([
      { transition: 2, position: 4, expected: [5, 6], actual: [9, 10] },
      { transition: 3, position: 2, expected: [3, 4, 9, 10, 11], actual: [] },
    ]);
    // Datums: [1,2,3,4,5,6] + [1,2,3,4,9,10,11] + [1,2,7,8] = 6 + 7 + 4.
    // Merged: 4 | +1+1 | +2+1 (common prefix 4) | +0 | +1+1 = 11.
    expect(audit.cost).toEqual({ trainedTokens: 17, mergedTokens: 11 });
  });

  it('costs nothing extra when every observation extends', () => {
    const audit = auditExtension({ transitions: [t([1, 2, 3], [4]), t([1, 2, 3, 4, 5], [6, 7])] });
    expect(audit).toEqual({ splits: [], cost: { trainedTokens: 7, mergedTokens: 7 } });
  });

  it('shows at most 8 tokens of context', () => {
    const long = Array.from({ length: 20 }, (_, i) => i);
    const audit = auditExtension({ transitions: [t(long, []), t([0, 1, 99, ...long], [1])] });
    expect(audit.splits).toEqual([
      { transition: 1, position: 2, expected: [2, 3, 4, 5, 6, 7, 8, 9], actual: [99, 0, 1, 2, 3, 4, 5, 6] },
    ]);
  });
});

describe('parseTrajectoryLine', () => {
  const good = () => ({
    id: 'x',
    transitions: [
      { ob: [1, 2], ac: { tokens: [3], logprobs: [-0.1] }, reward: 0, episode_done: false },
      { ob: [1, 2, 3, 4], ac: { tokens: [5, 6, 7, 8, 9, 10], maybe_logprobs: [-1, -1, -1, -1, -1, -1] } },
    ],
  });

  it('accepts the line shape, tinker’s maybe_logprobs, and defaults the advantage to 1', () => {
    const parsed = parseTrajectoryLine(good(), 'in.jsonl:1');
    expect(parsed.id).toBe('x');
    expect(parsed.advantage).toBe(1);
    expect(parsed.trajectory.transitions[1].ac.logprobs).toEqual([-1, -1, -1, -1, -1, -1]);
    expect(parsed.trajectory.transitions[0]).toEqual({
      ob: [1, 2],
      ac: { tokens: [3], logprobs: [-0.1] },
      reward: 0,
      episode_done: false,
    });
    const noLogprobs = parseTrajectoryLine(
      { id: 1, advantage: -2, transitions: [{ ob: [], ac: { tokens: [], maybe_logprobs: null } }] },
      'w',
    );
    expect(noLogprobs.advantage).toBe(-2);
    expect(noLogprobs.trajectory.transitions[0].ac).toEqual({ tokens: [] });
  });

  it('turns boolean metrics into 0/1 like Python float(True)', () => {
    const line = good();
    Object.assign(line.transitions[0], { metrics: { parse_error_masked: true } });
    const parsed = parseTrajectoryLine(line, 'w');
    expect(parsed.trajectory.transitions[0].metrics).toEqual({ parse_error_masked: 1 });
  });

  const failsWith = (mutate: (line: any) => void, message: string): void => {
    const line = good();
    mutate(line);
    expect(() => parseTrajectoryLine(line, 'in.jsonl:3')).toThrow(message);
  };

  it('names the JSON path of the problem', () => {
    failsWith((l) => (l.transitions[1].ac.tokens[5] = -1), 'in.jsonl:3: transitions[1].ac.tokens[5]: expected a token id (an integer from 0 to 4294967295), got -1');
    failsWith((l) => (l.transitions[0].ob[1] = 2.5), 'in.jsonl:3: transitions[0].ob[1]: expected a token id (an integer from 0 to 4294967295), got 2.5');
    failsWith((l) => (l.transitions[0].ob = 'abc'), 'in.jsonl:3: transitions[0].ob: expected an array of token ids');
    failsWith((l) => delete l.transitions[1].ac, 'in.jsonl:3: transitions[1].ac: expected an object');
    failsWith((l) => (l.transitions[0].ac.logprobs = ['x']), 'in.jsonl:3: transitions[0].ac.logprobs[0]: expected a finite number');
    failsWith((l) => l.transitions[1].ac.maybe_logprobs.pop(), 'in.jsonl:3: transitions[1].ac.maybe_logprobs: expected 6 numbers (one per token), got 5');
    failsWith((l) => (l.transitions[0].ac.maybe_logprobs = [0]), 'in.jsonl:3: transitions[0].ac: give "logprobs" or "maybe_logprobs", not both');
    failsWith((l) => (l.transitions[0].metrics = { 'stop/done': 'yes' }), 'in.jsonl:3: transitions[0].metrics["stop/done"]: expected a number');
    failsWith((l) => (l.transitions[0].reward = '1'), 'in.jsonl:3: transitions[0].reward: expected a finite number');
    failsWith((l) => (l.transitions[0].episode_done = 1), 'in.jsonl:3: transitions[0].episode_done: expected a boolean');
    failsWith((l) => (l.transitions[1] = null), 'in.jsonl:3: transitions[1]: expected an object');
    failsWith((l) => (l.transitions = {}), 'in.jsonl:3: transitions: expected an array');
    failsWith((l) => (l.advantage = 'high'), 'in.jsonl:3: advantage: expected a finite number');
    failsWith((l) => delete l.id, 'in.jsonl:3: id: missing');
    expect(() => parseTrajectoryLine([1], 'in.jsonl:4')).toThrow('in.jsonl:4: expected a JSON object');
  });
});
