/**
 * Transition-based merge: rebuild training datums (tokens, targets, sampled
 * logprobs, advantages, 0/1 action mask) from a trajectory of
 * (observation, action) transitions, with the semantics of tinker-cookbook's
 * `trajectory_to_data` (tinker_cookbook/rl/data_processing.py). This is an
 * independent reimplementation; the behaviour it reproduces:
 *
 * - A datum accumulates one flat token sequence. A transition whose
 *   observation starts with the whole accumulated sequence *extends* it: only
 *   the observation's new tail and then the action are appended. Otherwise the
 *   accumulated datum is emitted and a new one starts with the whole
 *   observation. An empty accumulator accepts anything (whole ob is "new").
 * - Observation positions: logprob 0, advantage 0, mask 0. Action positions:
 *   the sampled logprobs, the trajectory advantage, mask 1 — except on a
 *   transition flagged `metrics.parse_error_masked >= 1`, whose action gets
 *   mask 0 and advantage 0 (its logprobs are still copied).
 * - Emission applies the next-token shift: input = all tokens but the last,
 *   targets = all tokens but the first, and logprobs/advantages/mask are all
 *   sliced [1:] (so the very first token of a datum is never trained, even if
 *   it is an action token because the observation was empty).
 * - An accumulated sequence of 0 tokens emits nothing (e.g. a lone
 *   empty-ob/empty-action transition, as tinker's rollout writes for a prompt
 *   that overflowed). A sequence of exactly 1 token cannot be shifted: tinker
 *   raises DataValidationError("need at least 2 tokens ..."), and so do we.
 * - Missing logprobs: tinker raises ("Logprobs are not available") as soon as
 *   the transition is processed, even for an empty action. That is our
 *   default; `{ missingLogprobs: 'zero' }` opts into zeros instead.
 * - `reward`, `episode_done` and the trajectory's `final_ob` play no part.
 *
 * Deliberate differences (inputs tinker never produces):
 * - logprobs whose length differs from the action's token count are rejected
 *   per transition. tinker only asserts that the datum's totals agree, so
 *   mismatches that cancel out would go unnoticed and misalign silently.
 * - Like tinker, logprobs and advantages are float32 (its datums hold float32
 *   tensors): -0.3 comes out as -0.30000001192092896, exactly the double
 *   tinker's `.tolist()` gives, so the two can be compared field by field.
 */

/** Metric key tinker's environments set to 1.0 on a masked parse-error turn (rl/types.py). */
export const PARSE_ERROR_MASKED_METRIC_KEY = 'parse_error_masked';

export interface Action {
  tokens: number[];
  /** One sampled logprob per token; tinker calls this `maybe_logprobs`. */
  logprobs?: number[];
}

export interface Transition {
  /** The full observation (prompt) the model saw before acting. */
  ob: number[];
  ac: Action;
  reward?: number;
  episode_done?: boolean;
  metrics?: Record<string, number>;
}

export interface Trajectory {
  transitions: Transition[];
}

export interface Datum {
  /**
   * The whole merged sequence, unshifted. `tokens`, `target_tokens` and the per-target arrays are views into
   * one buffer per datum (nothing is copied for the shift).
   */
  sequence: Uint32Array;
  /** Model input: the merged sequence without its last token. */
  tokens: Uint32Array;
  /** The merged sequence without its first token. */
  target_tokens: Uint32Array;
  /** Per target position, like tinker (all sliced [1:]); float32 like its tensors. */
  logprobs: Float32Array;
  advantages: Float32Array;
  mask: Uint8Array;
  /**
   * Length of the observation that opened this datum (its prompt), counted in
   * the unshifted merged sequence (so the prompt covers targets
   * [0, firstObservationLength - 1)).
   */
  firstObservationLength: number;
  /** Transitions [transitionStart, transitionEnd) went into this datum (end exclusive). */
  transitionStart: number;
  transitionEnd: number;
}

export interface MergeOptions {
  /** 'error' (default) raises like tinker; 'zero' uses logprob 0 for every action token. */
  missingLogprobs?: 'error' | 'zero';
}

/** Does `ob` start with `before + action` (the sequence accumulated so far)? Read by index, nothing copied. */
function extendsSequence(before: readonly number[], action: readonly number[], ob: readonly number[]): boolean {
  const b = before.length;
  if (b + action.length > ob.length) return false;
  for (let i = 0; i < b; i++) if (before[i] !== ob[i]) return false;
  for (let i = 0; i < action.length; i++) if (action[i] !== ob[b + i]) return false;
  return true;
}

/** Same test as tinker's, applied to our plain token arrays. */
function isParseErrorMasked(transition: Transition): boolean {
  const value = transition.metrics?.[PARSE_ERROR_MASKED_METRIC_KEY];
  return value !== undefined && Number(value) >= 1;
}

function checkLogprobs(transition: Transition, index: number, options: MergeOptions): void {
  const { tokens, logprobs } = transition.ac;
  if (logprobs === undefined) {
    if (options.missingLogprobs === 'zero') return;
    throw new Error(`transitions[${index}].ac: logprobs are not available (tinker raises here too)`);
  }
  for (let i = 0; i < logprobs.length; i++) {
    if (!Number.isFinite(Math.fround(logprobs[i]))) throw new Error(`transitions[${index}].ac.logprobs[${i}]: ${logprobs[i]} is not a finite float32 (tinker's tensors)`);
  }
  if (logprobs.length !== tokens.length) {
    throw new Error(`transitions[${index}].ac: ${logprobs.length} logprobs for ${tokens.length} tokens`);
  }
}

const tooShort = (from: number, to: number, length: number) => new Error(
  `transitions[${from}..${to - 1}] merge into a ${length}-token ` +
    'sequence; at least 2 tokens are needed for the input/target shift (tinker raises DataValidationError)',
);

const notAnId = (path: string, value: number) => new Error(`${path}: expected a token id (an integer from 0 to ${0xffffffff}), got ${JSON.stringify(value)}`);

/**
 * Copy `ids[from..]` into `sequence` at `at`; returns where the copy ends. An id the Uint32Array would wrap
 * (negative, fractional, beyond 2^32 - 1) is an error naming its place. A function of its own so V8 optimizes
 * it on its own, early in a first pass.
 */
function copyIds(ids: readonly number[], from: number, sequence: Uint32Array, at: number, transition: number, field: string): number {
  for (let i = from; i < ids.length; i++, at++) {
    const id = ids[i];
    sequence[at] = id;
    if (sequence[at] !== id) throw notAnId(`transitions[${transition}].${field}[${i}]`, id);
  }
  return at;
}

/** Datums in the making: transitions [from, to) merge into `length` tokens. */
interface Planned { from: number; to: number; length: number; firstObservationLength: number }

/**
 * Split a trajectory into training datums exactly like tinker's
 * `trajectory_to_data(traj, traj_advantage)`.
 *
 * Two passes, O(total input tokens). The sequence accumulated after transition k is always ob[k] + ac[k]
 * (an extension appends ob's new tail and the action; a restart takes all of ob and the action), so the first
 * pass finds where datums split and how long each is by comparing each observation with the previous
 * observation and action, and makes every check tinker makes, in its order. The second fills one buffer per
 * datum (tokens, float32 logprobs and advantages, mask), allocated once at its final size; the one-token
 * shift is a view, not a copy.
 */
export function trajectoryToData(
  trajectory: Trajectory,
  advantage = 1,
  options: MergeOptions = {},
): Datum[] {
  if (!Number.isFinite(Math.fround(advantage))) throw new Error(`advantage ${advantage} is not a finite float32 (tinker's tensors)`);
  const transitions = trajectory.transitions;
  const planned: Planned[] = [];
  let from = 0;
  let length = 0;
  let firstObservationLength = 0;
  let before: readonly number[] = [];
  let action: readonly number[] = [];
  for (let k = 0; k < transitions.length; k++) {
    const transition = transitions[k];
    const { ob } = transition;
    if (length > 0 && !extendsSequence(before, action, ob)) {
      if (length < 2) throw tooShort(from, k, length);
      planned.push({ from, to: k, length, firstObservationLength });
      from = k;
      length = 0;
    }
    // A transition landing in an empty accumulator opens the datum, so its observation is the datum's
    // prompt (tinker also takes this path when all earlier transitions of the datum were empty).
    if (length === 0) firstObservationLength = ob.length;
    checkLogprobs(transition, k, options);
    before = ob;
    action = transition.ac.tokens;
    length = ob.length + action.length;
  }
  if (length > 0) {
    if (length < 2) throw tooShort(from, transitions.length, length);
    planned.push({ from, to: transitions.length, length, firstObservationLength });
  }

  const data: Datum[] = new Array(planned.length);
  for (let d = 0; d < planned.length; d++) {
    const plan = planned[d];
    const n = plan.length;
    // One zeroed buffer: tokens, logprobs, advantages (4 bytes each), then the mask. Observation positions
    // keep the zeros; only their ids are written.
    const buffer = new ArrayBuffer(13 * n);
    const sequence = new Uint32Array(buffer, 0, n);
    const logprobs = new Float32Array(buffer, 4 * n, n);
    const advantages = new Float32Array(buffer, 8 * n, n);
    const mask = new Uint8Array(buffer, 12 * n, n);
    let at = 0;
    for (let k = plan.from; k < plan.to; k++) {
      const transition = transitions[k];
      at = copyIds(transition.ob, at, sequence, at, k, 'ob');
      const tokens = transition.ac.tokens;
      const from = at;
      at = copyIds(tokens, 0, sequence, at, k, 'ac.tokens');
      const sampled = transition.ac.logprobs;
      if (sampled !== undefined) logprobs.set(sampled, from);
      if (isParseErrorMasked(transition)) continue;
      advantages.fill(advantage, from, at);
      mask.fill(1, from, at);
    }
    data[d] = {
      sequence,
      tokens: sequence.subarray(0, n - 1),
      target_tokens: sequence.subarray(1),
      logprobs: logprobs.subarray(1),
      advantages: advantages.subarray(1),
      mask: mask.subarray(1),
      firstObservationLength: plan.firstObservationLength,
      transitionStart: plan.from,
      transitionEnd: plan.to,
    };
  }
  return data;
}

// ---------------------------------------------------------------------------
// Audit
// ---------------------------------------------------------------------------

/** How many tokens of context an ExtensionSplit shows on each side. */
export const AUDIT_CONTEXT_TOKENS = 8;

/** A transition whose observation does not extend the sequence accumulated before it. */
export interface ExtensionSplit {
  transition: number;
  /**
   * First index where the observation departs from the accumulated sequence
   * (their longest common prefix). When the observation is a proper prefix of
   * the accumulated sequence (it is just shorter), this is the observation's
   * length: that is where the missing tokens start.
   */
  position: number;
  /** Up to AUDIT_CONTEXT_TOKENS tokens of the accumulated sequence from `position`. */
  expected: number[];
  /** Up to AUDIT_CONTEXT_TOKENS tokens of the observation from `position` (empty if it ended). */
  actual: number[];
}

export interface ExtensionCost {
  /**
   * Tokens actually sent to training: the sum of the unshifted sequence
   * lengths of the datums trajectoryToData builds (each datum's
   * `tokens.length + 1`).
   */
  trainedTokens: number;
  /**
   * Length of the single sequence you would get if nothing had split: the
   * first observation, then for every transition its action, and for every
   * later observation only its part that is new with respect to the previous
   * full sequence (previous observation + previous action), i.e. what lies
   * beyond their longest common prefix. Equals trainedTokens when nothing
   * splits; the difference is the prompt re-encoding a split costs.
   */
  mergedTokens: number;
}

export interface ExtensionAudit {
  splits: ExtensionSplit[];
  cost: ExtensionCost;
}

/**
 * Find where a trajectory breaks sequence extension, and what it costs.
 *
 * Uses the fact that, in tinker's scheme, the sequence accumulated after
 * transition k is always exactly ob[k] + ac[k] (extension appends ob's new
 * tail and the action; a restart takes all of ob and the action). So each
 * observation is compared by index against the previous observation and
 * action, without building any array.
 */
export function auditExtension(trajectory: Trajectory): ExtensionAudit {
  const splits: ExtensionSplit[] = [];
  let trainedTokens = 0;
  let mergedTokens = 0;
  let previous: Transition | undefined;

  trajectory.transitions.forEach((transition, k) => {
    const { ob } = transition;
    const actionLength = transition.ac.tokens.length;
    if (previous === undefined) {
      trainedTokens += ob.length + actionLength;
      mergedTokens += ob.length + actionLength;
      previous = transition;
      return;
    }
    const prevOb = previous.ob;
    const prevAc = previous.ac.tokens;
    const prevLength = prevOb.length + prevAc.length;
    const at = (i: number): number => (i < prevOb.length ? prevOb[i] : prevAc[i - prevOb.length]);

    // Longest common prefix of (prevOb + prevAc) and ob, by index.
    const limit = Math.min(prevLength, ob.length);
    let common = 0;
    while (common < limit && at(common) === ob[common]) common++;

    mergedTokens += ob.length - common + actionLength;
    if (common === prevLength) {
      trainedTokens += ob.length - prevLength + actionLength;
    } else {
      trainedTokens += ob.length + actionLength;
      const expected: number[] = [];
      for (let i = common; i < prevLength && expected.length < AUDIT_CONTEXT_TOKENS; i++) {
        expected.push(at(i));
      }
      splits.push({
        transition: k,
        position: common,
        expected,
        actual: ob.slice(common, common + AUDIT_CONTEXT_TOKENS),
      });
    }
    previous = transition;
  });

  return { splits, cost: { trainedTokens, mergedTokens } };
}
