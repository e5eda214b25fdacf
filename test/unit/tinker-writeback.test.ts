/**
 * `--out-format` on tinker datums (issue 20 item 16). What trains a datum is its `advantages` (tinker-cookbook
 * 9dfcc3a2 `tinker_cookbook/rl/train.py` `_remove_mask` drops `mask` before `forward_backward`; the RL losses
 * weigh each target by its advantage), so the write-back must put the mask into the advantages: 0 where the mask
 * is 0. Datums are built here the way `tinker_cookbook/rl/data_processing.py` `trajectory_to_data` builds them
 * (per transition: observation tokens advantage 0 / mask 0, action tokens the trajectory's advantage / mask 1;
 * then every tensor drops its first entry), from a Search-R1 rollout tokenized piece by piece (so which tokens are
 * the model's is known by construction), as TensorData `{data, dtype, shape}` the way `TensorData.from_torch`
 * writes them (tinker d595dc2b `src/tinker/types/tensor_data.py`).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { MaskerPool } from '../../src/masker.ts';
import { readShaped, writeBackShaped, ShapeError } from '../../src/io/shapes.ts';
import { maskPrepared, prepareRollout } from '../../src/io/prepare.ts';
import { weighted } from '../../src/io/mask-forms.ts';
import type { Built } from './construct.ts';
import { ADVANTAGE, openCanberra, tensor, tinkerDatum } from '../fixtures/tinker-datums.ts';

let pool: MaskerPool;
let built: Built;

beforeAll(async () => {
  ({ pool, built } = await openCanberra());
}, 120_000);

/** A Datum as trajectory_to_data makes it, with `trains[i]` saying which stream tokens it put advantage on. */
function datum(trains: number[], advantages?: number[]) {
  return tinkerDatum(built.ids, trains, advantages ?? trains.map((bit) => (bit ? ADVANTAGE : 0)));
}

function writeBack(value: Record<string, unknown>, observationWeight?: number) {
  const line = readShaped(value);
  const masks = line.rollouts.map((rollout) => {
    const mask = maskPrepared(pool, prepareRollout(pool, rollout)).mask;
    return observationWeight === undefined ? mask : weighted(mask, observationWeight);
  });
  return writeBackShaped(line, value, masks) as ReturnType<typeof datum>;
}

const observation = () => built.ranges[2];
const answer = () => built.ranges[3];

describe('tinker write-back: what trains is what the mask says', () => {
  it('a datum that trains the environment\'s reply: advantages and mask 0 there, the action tokens keep the advantage, TensorData keeps dtype and shape', () => {
    // The merge bug: the information block trained like an action.
    const { start, end } = observation();
    const wrong = built.expected.map((bit, i) => (i >= start && i < end ? 1 : bit));
    const value = datum(wrong);
    const back = writeBack(value);
    const inputs = back.loss_fn_inputs;
    const want = built.expected.slice(1);
    expect(inputs.mask).toEqual({ data: want, dtype: 'float32', shape: [want.length] });
    expect(inputs.advantages).toEqual({ data: want.map((bit) => (bit ? ADVANTAGE : 0)), dtype: 'float32', shape: [want.length] });
    // Every other field as it came: targets, logprobs, the model input.
    expect(inputs.target_tokens).toEqual(value.loss_fn_inputs.target_tokens);
    expect(inputs.logprobs).toEqual(value.loss_fn_inputs.logprobs);
    expect(back.model_input).toEqual(value.model_input);
  });

  it('a datum that left an action token untrained: it gets the trajectory\'s advantage (trajectory_to_data gives every action token the same one)', () => {
    const at = answer().start + 1;
    const value = datum(built.expected.map((bit, i) => (i === at ? 0 : bit)));
    const back = writeBack(value);
    expect(back.loss_fn_inputs.advantages.data[at - 1]).toBe(ADVANTAGE);
    expect(back.loss_fn_inputs.advantages.data).toEqual(built.expected.slice(1).map((bit) => (bit ? ADVANTAGE : 0)));
  });

  it('a datum without a mask (rl_loop.py, or one whose mask was stripped) gets none added: only its advantages change', () => {
    const { start, end } = observation();
    const value = datum(built.expected.map((bit, i) => (i >= start && i < end ? 1 : bit)));
    delete (value.loss_fn_inputs as Partial<typeof value.loss_fn_inputs>).mask;
    const back = writeBack(value);
    expect(back.loss_fn_inputs).not.toHaveProperty('mask');
    expect(back.loss_fn_inputs.advantages.data).toEqual(built.expected.slice(1).map((bit) => (bit ? ADVANTAGE : 0)));
  });

  it('per-token advantages (KL-adjusted) and a token the mask newly trains: no one value to give it, the error names the field and index', () => {
    const at = answer().start + 1;
    const trains = built.expected.map((bit, i) => (i === at ? 0 : bit));
    const perToken = trains.map((bit, i) => (bit ? ADVANTAGE + i / 1000 : 0));
    expect(() => writeBack(datum(trains, perToken))).toThrow(new RegExp(`loss_fn_inputs\\.advantages\\[${at - 1}\\]: the mask trains target ${at - 1} \\(token ${at}\\)`));
    // Removing training only zeroes: per-token values are kept where the mask keeps training.
    const { start, end } = observation();
    const over = built.expected.map((bit, i) => (i >= start && i < end ? 1 : bit));
    const overValues = over.map((bit, i) => (bit ? ADVANTAGE + i / 1000 : 0));
    expect(writeBack(datum(over, overValues)).loss_fn_inputs.advantages.data).toEqual(built.expected.slice(1).map((bit, i) => (bit ? overValues[i + 1] : 0)));
  });

  it('--observation-weight: weights in a float32 mask and the advantage scaled by them; an int64 mask cannot hold them', () => {
    const value = datum(built.expected);
    const back = writeBack(value, 0.25);
    const want = built.expected.slice(1).map((bit) => (bit ? 1 : 0.25));
    expect(back.loss_fn_inputs.mask).toEqual({ data: want, dtype: 'float32', shape: [want.length] });
    expect(back.loss_fn_inputs.advantages.data).toEqual(want.map((weight) => weight * ADVANTAGE));
    const int64 = datum(built.expected);
    int64.loss_fn_inputs.mask = tensor(int64.loss_fn_inputs.mask.data, 'int64');
    expect(() => writeBack(int64, 0.25)).toThrow(/loss_fn_inputs\.mask\[\d+\]: 0\.25 does not fit this int64 TensorData/);
  });

  it('a supervised datum (cross_entropy trains by weights: supervised/common.py datum_from_model_input_weights) gets the mask in its weights, and no mask added', () => {
    // Weights 1 on every target after the prompt, the environment's reply included (a "train on all assistant text" mistake).
    const first = built.expected.indexOf(1);
    const value = datum(built.expected);
    const weights = built.ids.map((_, i) => (i >= first ? 1 : 0));
    value.loss_fn_inputs = { target_tokens: value.loss_fn_inputs.target_tokens, weights: tensor(weights.slice(1), 'float32') } as never;
    const back = writeBack(value) as unknown as { loss_fn_inputs: Record<string, unknown> };
    expect(back.loss_fn_inputs).not.toHaveProperty('mask');
    expect(back.loss_fn_inputs.weights).toEqual(tensor(built.expected.slice(1), 'float32'));
  });

  it('the flat datum tagmask merge writes (plain lists): mask and advantages rewritten, still plain lists', () => {
    const { start, end } = observation();
    const trains = built.expected.map((bit, i) => (i >= start && i < end ? 1 : bit));
    const flat = { id: 'd', tokens: built.ids.slice(0, -1), target_tokens: built.ids.slice(1), advantages: trains.slice(1).map((bit) => (bit ? ADVANTAGE : 0)), mask: trains.slice(1) };
    const back = writeBack(flat) as unknown as typeof flat;
    expect(back.mask).toEqual(built.expected.slice(1));
    expect(back.advantages).toEqual(built.expected.slice(1).map((bit) => (bit ? ADVANTAGE : 0)));
    expect(back.tokens).toBe(flat.tokens);
  });
});

describe('tinker datums that cannot be read as they claim', () => {
  it('target_tokens that are not the input shifted by one: an error naming the target index and the input token', () => {
    const value = datum(built.expected);
    const targets = [...value.loss_fn_inputs.target_tokens.data];
    targets[10] = targets[10] + 1;
    value.loss_fn_inputs.target_tokens = tensor(targets, 'int64');
    expect(() => readShaped(value)).toThrow(ShapeError);
    expect(() => readShaped(value)).toThrow(new RegExp(`loss_fn_inputs\\.target_tokens\\[10\\] is ${targets[10]} but input token 11 is ${built.ids[11]}`));
    // The flat spelling says the same with its own field name.
    expect(() => readShaped({ tokens: built.ids.slice(0, -1), target_tokens: targets, mask: built.expected.slice(1) })).toThrow(/^target_tokens\[10\] is /);
    // The last target has no input token to agree with: it is the stream's last token.
    const last = datum(built.expected);
    last.loss_fn_inputs.target_tokens.data[last.loss_fn_inputs.target_tokens.data.length - 1] = 7;
    expect(readShaped(last).rollouts[0].kind).toBe('tokens');
  });

  it('a TensorData whose shape does not fit its data, or a sparse one, is an error naming the field', () => {
    const value = datum(built.expected);
    (value.loss_fn_inputs.mask as { shape: number[] }).shape = [2, value.loss_fn_inputs.mask.data.length / 2];
    expect(() => readShaped(value)).toThrow(/loss_fn_inputs\.mask\.shape is \[2,/);
    const sparse = datum(built.expected);
    Object.assign(sparse.loss_fn_inputs.target_tokens, { sparse_crow_indices: [0, 1], sparse_col_indices: [0] });
    expect(() => readShaped(sparse)).toThrow(/loss_fn_inputs\.target_tokens: a sparse \(CSR\) TensorData/);
  });
});
