/**
 * The readers' frames and the merge's extension rule on hand-made records (no tokenizer): what each framework's
 * fields mean (src/io/shapes.ts cites the source of each), and tinker's sequence extension
 * (tinker-cookbook `trajectory_to_data`: an observation that starts with the sequence so far extends it,
 * however few tokens it adds).
 */
import { describe, expect, it } from 'vitest';
import { readShaped, givenInStream, type TokenRollout } from '../../src/io/shapes.ts';
import { trajectoryToData } from '../../src/merge.ts';

const one = (value: Record<string, unknown>, needMask = false) => readShaped(value, undefined, needMask).rollouts[0] as TokenRollout;

describe('framework frames', () => {
  it('slime: loss_mask null trains every response token (Sample.loss_mask None); a list is taken as it is', () => {
    const rollout = one({ id: 's', tokens: [1, 2, 3, 4, 5], response_length: 3, loss_mask: null }, true);
    expect(Array.from(rollout.tokens)).toEqual([1, 2, 3, 4, 5]);
    expect(rollout.promptLength).toBe(2);
    expect(rollout.given).toEqual({ field: 'loss_mask', values: [1, 1, 1], start: 2, shift: 0 });
    expect(one({ id: 's', tokens: [1, 2, 3], response_length: 2, loss_mask: [0, 1] }).given!.values).toEqual([0, 1]);
  });

  it('verl padded: an all-padding prompt is an empty prompt; right padding is cut from the response and its mask', () => {
    const rollout = one({ id: 'v', prompts: [0, 0], responses: [7, 8, 0], attention_mask: [0, 0, 1, 1, 0], response_mask: [1, 0, 0] }, true);
    expect(Array.from(rollout.tokens)).toEqual([7, 8]);
    expect(rollout.promptLength).toBe(0);
    expect(rollout.given).toEqual({ field: 'response_mask', values: [1, 0], start: 0, shift: 0 });
    const padded = one({ id: 'v', prompts: [0, 5, 6], responses: [7, 0], attention_mask: [0, 1, 1, 1, 0] });
    expect(Array.from(padded.tokens)).toEqual([5, 6, 7]);
    expect(padded.promptLength).toBe(2);
  });

  it('OpenRLHF: action_mask[i] belongs to token i + 1, laid over the stream', () => {
    const rollout = one({ id: 'o', sequences: [1, 2, 3, 4], action_mask: [0, 1, 1] }, true);
    expect(givenInStream(rollout)).toEqual({ mask: [0, 1, 1], shift: 1 });
  });
});

describe('sequence extension', () => {
  it('an observation equal to the sequence so far (nothing new) still extends it: one datum', () => {
    const data = trajectoryToData({ transitions: [
      { ob: [1, 2], ac: { tokens: [3, 4], logprobs: [0, 0] } },
      { ob: [1, 2, 3, 4], ac: { tokens: [5], logprobs: [0] } },
    ] });
    expect(data).toHaveLength(1);
    // Sequence [1 2 3 4 5]; targets are tokens 1…4 of it; the sampled ones are 3, 4, 5.
    expect(Array.from(data[0].mask)).toEqual([0, 1, 1, 1]);
  });

  it('an observation one token short of the sequence does not extend it: two datums', () => {
    const data = trajectoryToData({ transitions: [
      { ob: [1, 2], ac: { tokens: [3, 4], logprobs: [0, 0] } },
      { ob: [1, 2, 3], ac: { tokens: [5], logprobs: [0] } },
    ] });
    expect(data).toHaveLength(2);
  });
});
