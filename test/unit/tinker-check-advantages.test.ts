/**
 * `check` on tinker datums sees what trains (issue 17 / 20). tinker-cookbook 9dfcc3a2 `tinker_cookbook/rl/train.py`
 * `_remove_mask` drops `mask` before `forward_backward`, and the RL losses weigh each target by its `advantages`
 * (cross_entropy by `weights`): a target with a nonzero advantage trains whatever its mask says. So a datum whose
 * mask is right but whose advantage sits on an observation token disagrees, on that token, named by the advantage's
 * field; an advantage of exactly 0 (a group whose rewards were all equal) is no disagreement.
 *
 * Datums are built the way `tinker_cookbook/rl/data_processing.py` `trajectory_to_data` builds them (action tokens
 * the trajectory's advantage and mask 1, observation tokens 0 and 0; every tensor drops its first entry), from a
 * Search-R1 rollout tokenized piece by piece, so which tokens are the model's is known by construction.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { MaskerPool } from '../../src/masker.ts';
import { readShaped, type TokenRollout } from '../../src/io/shapes.ts';
import { maskPrepared, prepareRollout } from '../../src/io/prepare.ts';
import { auditPrepared } from '../../src/io/audit.ts';
import type { Built } from './construct.ts';
import { ADVANTAGE, openCanberra, tensor, tinkerDatum } from '../fixtures/tinker-datums.ts';

let pool: MaskerPool;
let built: Built;

beforeAll(async () => {
  ({ pool, built } = await openCanberra());
}, 120_000);

/** A Datum as trajectory_to_data makes it: `mask` over the stream's tokens, `advantages` per stream token. */
function datum(mask: number[], advantages: number[]) {
  const made = tinkerDatum(built.ids, mask, advantages);
  return { id: 'd', ...made, loss_fn_inputs: made.loss_fn_inputs as Record<string, unknown> };
}

const rightAdvantages = (): number[] => built.expected.map((bit) => (bit ? ADVANTAGE : 0));

function check(value: Record<string, unknown>) {
  const line = readShaped(value, undefined, true);
  const rollout = line.rollouts[0] as TokenRollout;
  const prepared = prepareRollout(pool, rollout);
  return { given: rollout.given!, runs: auditPrepared(pool, prepared, maskPrepared(pool, prepared))! };
}

/** A token in the middle of the environment's `<information>` reply (stream index). */
const planted = () => {
  const { start, end } = built.ranges[2];
  return Math.floor((start + end) / 2);
};

describe('check on tinker datums weighs what trains: advantages', () => {
  it('a datum as trajectory_to_data makes it agrees', () => {
    const { given, runs } = check(datum(built.expected, rightAdvantages()));
    expect(given.field).toBe('loss_fn_inputs.mask');
    expect(runs).toEqual([]);
  });

  it('mask right, an advantage planted on one token of the <information> reply: a disagreement on exactly that token, named loss_fn_inputs.advantages', () => {
    const at = planted();
    const advantages = rightAdvantages();
    advantages[at] = ADVANTAGE;
    const { runs } = check(datum(built.expected, advantages));
    expect(runs).toHaveLength(1);
    // Stream token `at` is target `at - 1`, the advantage's own index (target space, as the mask is).
    expect(runs[0]).toMatchObject({ start: at, end: at + 1, given: 1, protocol: 0, field: `loss_fn_inputs.advantages[${at - 1}]` });
    expect(runs[0].parts.map((part) => part.code)).toEqual(['environment-reply']);
  });

  it('the whole reply given the advantage (mask still right): one run over the reply, named at its first target', () => {
    const { start, end } = built.ranges[2];
    const advantages = built.expected.map((bit, i) => (bit || (i >= start && i < end) ? ADVANTAGE : 0));
    const { runs } = check(datum(built.expected, advantages));
    expect(runs.map((run) => [run.start, run.end, run.field])).toEqual([[start, end, `loss_fn_inputs.advantages[${start - 1}]`]]);
  });

  it('every advantage 0 (a group whose rewards were all equal) with the right mask agrees: advantage 0 where the mask is 1 is legitimate', () => {
    const { runs } = check(datum(built.expected, built.ids.map(() => 0)));
    expect(runs).toEqual([]);
  });

  it('a wrong mask on the reply is still reported once, by the mask, where the advantage says the same', () => {
    const { start, end } = built.ranges[2];
    const wrong = built.expected.map((bit, i) => (i >= start && i < end ? 1 : bit));
    const { runs } = check(datum(wrong, wrong.map((bit) => (bit ? ADVANTAGE : 0))));
    expect(runs.map((run) => [run.start, run.end, run.field])).toEqual([[start, end, `loss_fn_inputs.mask[${start - 1}]`]]);
  });
});

describe('check on tinker datums without a mask (rl_loop.py, or a mask stripped): the advantages\' nonzero set, in the 1 direction only', () => {
  const withoutMask = (advantages: number[]) => {
    const value = datum(built.expected, advantages);
    delete value.loss_fn_inputs.mask;
    return value;
  };

  it('right advantages agree; all-zero advantages agree too (a 0 is no claim that the token does not train)', () => {
    const right = check(withoutMask(rightAdvantages()));
    expect(right.given).toMatchObject({ field: 'loss_fn_inputs.advantages', trainedOnly: true });
    expect(right.runs).toEqual([]);
    expect(check(withoutMask(built.ids.map(() => 0))).runs).toEqual([]);
  });

  it('an advantage planted on the reply: that token, named loss_fn_inputs.advantages', () => {
    const at = planted();
    const advantages = rightAdvantages();
    advantages[at] = -ADVANTAGE;
    const { runs } = check(withoutMask(advantages));
    expect(runs.map((run) => [run.start, run.end, run.given, run.protocol, run.field])).toEqual([[at, at + 1, 1, 0, `loss_fn_inputs.advantages[${at - 1}]`]]);
  });

  it('a supervised datum trains by weights (cross_entropy): a weight on the reply disagrees, named loss_fn_inputs.weights', () => {
    const at = planted();
    const weights = built.expected.map((bit, i) => (bit || i === at ? 1 : 0));
    const value = { id: 's', model_input: { chunks: [{ tokens: built.ids.slice(0, -1) }] }, loss_fn_inputs: { target_tokens: tensor(built.ids.slice(1), 'int64'), weights: tensor(weights.slice(1), 'float32') } };
    const { runs } = check(value);
    expect(runs.map((run) => [run.start, run.end, run.field])).toEqual([[at, at + 1, `loss_fn_inputs.weights[${at - 1}]`]]);
  });

  it('the flat datum (tagmask merge\'s spelling) with advantages and no mask is read the same way', () => {
    const at = planted();
    const advantages = rightAdvantages();
    advantages[at] = ADVANTAGE;
    const flat = { id: 'f', tokens: built.ids.slice(0, -1), target_tokens: built.ids.slice(1), advantages: advantages.slice(1) };
    const { runs } = check(flat);
    expect(runs.map((run) => [run.start, run.end, run.field])).toEqual([[at, at + 1, `advantages[${at - 1}]`]]);
  });
});
