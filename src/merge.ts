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
  /** Model input: the merged sequence without its last token. */
  tokens: number[];
  /** The merged sequence without its first token. */
  target_tokens: number[];
  /** Per target position, like tinker (all sliced [1:]). */
  logprobs: number[];
  advantages: number[];
  mask: number[];
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

/**
 * Length of the longest common prefix of `a` and `b`, read by index so nothing
 * is copied. Cost is at most min(a.length, b.length).
 */
function commonPrefixLength(a: readonly number[], b: readonly number[]): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

/** Same test as tinker's, applied to our plain token arrays. */
function isParseErrorMasked(transition: Transition): boolean {
  const value = transition.metrics?.[PARSE_ERROR_MASKED_METRIC_KEY];
  return value !== undefined && Number(value) >= 1;
}

function actionLogprobs(transition: Transition, index: number, options: MergeOptions): number[] {
  const { tokens, logprobs } = transition.ac;
  if (logprobs === undefined) {
    if (options.missingLogprobs === 'zero') return new Array<number>(tokens.length).fill(0);
    throw new Error(`transitions[${index}].ac: logprobs are not available (tinker raises here too)`);
  }
  const outside = logprobs.findIndex((x) => !Number.isFinite(Math.fround(x)));
  if (outside >= 0) throw new Error(`transitions[${index}].ac.logprobs[${outside}]: ${logprobs[outside]} is not a finite float32 (tinker's tensors)`);
  if (logprobs.length !== tokens.length) {
    throw new Error(
      `transitions[${index}].ac: ${logprobs.length} logprobs for ${tokens.length} tokens`,
    );
  }
  return logprobs;
}

/**
 * Split a trajectory into training datums exactly like tinker's
 * `trajectory_to_data(traj, traj_advantage)`.
 *
 * Cost is O(total input tokens): each observation is compared once, by index,
 * against the sequence accumulated so far (which it must contain anyway to
 * extend it), and tokens are pushed onto one growing array per datum.
 */
export function trajectoryToData(
  trajectory: Trajectory,
  advantage = 1,
  options: MergeOptions = {},
): Datum[] {
  if (!Number.isFinite(Math.fround(advantage))) throw new Error(`advantage ${advantage} is not a finite float32 (tinker's tensors)`);
  const data: Datum[] = [];
  let sequence: number[] = [];
  let logprobs: number[] = [];
  let advantages: number[] = [];
  let mask: number[] = [];
  let transitionStart = 0;
  let firstObservationLength = 0;

  const emit = (transitionEnd: number): void => {
    if (sequence.length < 2) {
      throw new Error(
        `transitions[${transitionStart}..${transitionEnd - 1}] merge into a ${sequence.length}-token ` +
          'sequence; at least 2 tokens are needed for the input/target shift (tinker raises DataValidationError)',
      );
    }
    data.push({
      tokens: sequence.slice(0, -1),
      target_tokens: sequence.slice(1),
      logprobs: logprobs.slice(1).map(Math.fround),
      advantages: advantages.slice(1).map(Math.fround),
      mask: mask.slice(1),
      firstObservationLength,
      transitionStart,
      transitionEnd,
    });
  };

  trajectory.transitions.forEach((transition, k) => {
    const { ob } = transition;
    const actionTokens = transition.ac.tokens;
    let newFrom = 0; // index in ob where the not-yet-accumulated part starts
    if (sequence.length > 0) {
      const extends_ =
        sequence.length <= ob.length && commonPrefixLength(sequence, ob) === sequence.length;
      if (extends_) {
        newFrom = sequence.length;
      } else {
        emit(k);
        sequence = [];
        logprobs = [];
        advantages = [];
        mask = [];
        transitionStart = k;
      }
    }
    // A transition landing in an empty accumulator opens the datum, so its
    // observation is the datum's prompt (tinker also takes this path when all
    // earlier transitions of the datum were empty).
    if (sequence.length === 0) firstObservationLength = ob.length;

    const sampled = actionLogprobs(transition, k, options);
    const masked = isParseErrorMasked(transition);
    const actionMask = masked ? 0 : 1;
    const actionAdvantage = masked ? 0 : advantage;

    for (let i = newFrom; i < ob.length; i++) {
      sequence.push(ob[i]);
      logprobs.push(0);
      advantages.push(0);
      mask.push(0);
    }
    for (let i = 0; i < actionTokens.length; i++) {
      sequence.push(actionTokens[i]);
      logprobs.push(sampled[i]);
      advantages.push(actionAdvantage);
      mask.push(actionMask);
    }
  });

  if (sequence.length > 0) emit(trajectory.transitions.length);
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
