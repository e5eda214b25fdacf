/**
 * Rollout shapes: how each RL framework writes a rollout, read into one token stream (plus the mask the
 * line brings, in its own frame), and written back with the framework's own field names.
 *
 * Every field name and frame below was read in the framework's source (snapshot commits):
 *
 * - verl 1dda039b: `verl/experimental/agent_loop/agent_loop.py` `AgentLoopOutput{prompt_ids, response_ids,
 *   response_mask}` (response_mask covers response_ids: 1 for LLM tokens, 0 for tool responses); the padded
 *   batch (`_postprocess`): `prompts` left-padded, `responses` right-padded, `attention_mask` over both
 *   (0 on padding), `response_mask` over the padded response (multiplied by its attention mask).
 * - TRL f2cd5771: `trl/trainer/grpo_trainer.py` returns `prompt_ids`, `completion_ids`, `completion_mask`
 *   (1 on completion tokens up to EOS) and, in multi-turn tool use, `tool_mask` (0 on tool-result tokens);
 *   the loss mask is `completion_mask * tool_mask`.
 * - SkyRL a9564572: `skyrl/train/generators/base.py` `GeneratorOutput{prompt_token_ids, response_ids,
 *   loss_masks, …}`, each a list with one entry per rollout; `loss_masks[i]` covers `response_ids[i]`
 *   (`skyrl/train/dataset/preprocess.py`).
 * - slime 624b824a: `slime/utils/types.py` `Sample{tokens, response_length, loss_mask}`: `tokens` is prompt +
 *   response, `loss_mask` covers the last `response_length` tokens (None means all ones).
 * - OpenRLHF 3c3be623: `openrlhf/trainer/ppo_utils/samples_generator.py` builds `action_mask` over the
 *   concatenated tokens from `action_ranges`, then keeps `action_mask[1:]`: one shorter than `sequences`,
 *   `action_mask[i]` belongs to token i + 1 (it lines up with the log-probs of the next token).
 * - AReaL 4aef98d8: `areal/workflow/rlvr.py`, `multi_turn.py`: `input_ids` and `loss_mask` of the same
 *   length (`[0]*input_len + [1]*output_len` per turn); the trainer rolls it by one itself.
 * - verifiers a60a606e: `verifiers/legacy/types.py` `TrajectoryStepTokens{prompt_ids, prompt_mask,
 *   completion_ids, completion_mask}`: `prompt_mask` is a loss mask over the prompt (all 0), not attention.
 * - prime-rl 559b4477: `src/prime_rl/trainer/rl/token_export.py` writes `{token_ids, position_ids, loss_mask
 *   (bool), …}` per packed micro-sequence; `src/prime_rl/trainer/batch.py` packs samples whose
 *   `position_ids` restart at 0, and `loss_mask` is aligned with `token_ids` (`TrainingSample.mask`).
 * - tinker-cookbook 9dfcc3a2: a `Datum` is `model_input` (a `ModelInput` of chunks, each
 *   `EncodedTextChunk{tokens}`; `tinker_cookbook/display.py` flattens `datum.model_input.chunks`) and
 *   `loss_fn_inputs{target_tokens, mask, …}`, all in target space; `tagmask merge` writes the flat form
 *   `{tokens, target_tokens, mask}`.
 */
import type { OptionValues } from '../scan/bind.ts';
import { isObject, jsonText, ShapeError, tokenArray } from './json.ts';
import { idText } from './lines.ts';
import { checkShiftedTargets, signalNumbers, TINKER_SIGNALS, tinkerTensor, writeTinkerInputs } from './tinker.ts';

export type ShapeName =
  | 'flat' | 'tinker' | 'verl' | 'verl-padded' | 'trl' | 'verifiers' | 'skyrl' | 'slime' | 'openrlhf' | 'areal'
  | 'prime-rl' | 'text-io' | 'text-prompt' | 'text' | 'messages';

/** The mask a line brings, as the framework lays it out. */
export interface GivenMask {
  /** Field name(s) it came from, as the framework spells them (`response_mask`, `completion_mask*tool_mask`). */
  field: string;
  /** Its values (0/1), unpadded. */
  values: number[];
  /** Stream position of `values[0]`'s token (for shift 1: `values[i]` belongs to token start + i + 1). */
  start: number;
  shift: 0 | 1;
  /**
   * The mask over padding the stream leaves out (verl's padded batch: response positions whose attention_mask
   * is 0), with those positions' ids, when it holds a 1; `values[values.length + k]` of the field is `padding.values[k]`. The
   * audit reports a 1 there as padding trained (verl#3805).
   */
  padding?: { values: number[]; ids: number[] };
  /**
   * What the framework trains by besides the mask, in the mask's frame (start, shift): a tinker datum's
   * `advantages` and `weights`, 1 where the value is not 0. tinker-cookbook drops `mask` before training, so a
   * token with a nonzero signal trains whatever its mask says (see src/io/tinker.ts).
   */
  signals?: Array<{ field: string; values: number[] }>;
  /**
   * `values` is a signal's nonzero set, not a mask (a datum with no `mask`): a 1 trains, but a 0 says nothing
   * (an advantage of exactly 0 is legitimate: a group whose rewards are all equal), so only its 1s are checked.
   */
  trainedOnly?: boolean;
}

/** One rollout read from a token shape: one stream of ids, where its prompt ends, and its given mask. */
export interface TokenRollout {
  kind: 'tokens';
  id: unknown;
  tokens: ArrayLike<number>;
  /** -1: unknown, let the grammar find the prompt's end. */
  promptLength: number;
  options: OptionValues;
  given?: GivenMask;
}

/** A rollout given as text: prompt (may be empty) and response, or one text. */
export interface TextRollout {
  kind: 'text';
  id: unknown;
  options: OptionValues;
  /** Known prompt text (`input`, `prompt`), or undefined when the grammar must find the prompt's end. */
  prompt?: string;
  text: string;
  /** The field names, for messages. */
  fields: string[];
}

/** A conversation in OpenAI / Hugging Face message form, to render with the tokenizer's chat template. */
export interface MessagesRollout {
  kind: 'messages';
  id: unknown;
  options: OptionValues;
  messages: Array<Record<string, unknown>>;
  tools?: unknown[];
}

export type ShapedRollout = TokenRollout | TextRollout | MessagesRollout;

/** One input line (or Parquet row) read in its shape: one rollout, or several (SkyRL batches, prime-rl packs). */
export interface ShapedLine {
  shape: ShapeName;
  rollouts: ShapedRollout[];
}

export { ShapeError };

type Json = Record<string, unknown>;

export function maskValues(value: unknown, field: string): number[] {
  if (!Array.isArray(value)) throw new ShapeError(`"${field}" must be an array of 0/1`);
  return value.map((item, i) => {
    // Float masks (tinker, SkyRL write 0.0/1.0) and booleans (prime-rl) are accepted; anything else is an error.
    if (item === 0 || item === 1) return item;
    if (item === true || item === false) return item ? 1 : 0;
    throw new ShapeError(`${field}[${i}]: expected 0 or 1, got ${jsonText(item)}`);
  });
}

export function readOptions(value: unknown): OptionValues {
  if (value === undefined) return {};
  if (!isObject(value)) throw new ShapeError('"options" must be an object of grammar option values');
  for (const [key, item] of Object.entries(value)) {
    if (item !== null && typeof item !== 'number') throw new ShapeError(`options.${key}: expected a number or null, got ${jsonText(item)}`);
  }
  return value as OptionValues;
}

const sameLength = (a: { length: number }, aName: string, b: { length: number }, bName: string) => {
  if (a.length !== b.length) throw new ShapeError(`${aName} has ${a.length} entries for ${b.length} ${bName}`);
};

/** A prompt + response stream with a response-only mask. */
function promptResponse(id: unknown, options: OptionValues, prompt: number[], response: number[], mask: number[] | undefined, field: string): TokenRollout {
  const rollout: TokenRollout = { kind: 'tokens', id, tokens: prompt.concat(response), promptLength: prompt.length, options };
  if (mask) {
    sameLength(mask, field, response, 'response tokens');
    rollout.given = { field, values: mask, start: prompt.length, shift: 0 };
  }
  return rollout;
}

/** tinker `ModelInput` JSON: `{"chunks": [{"tokens": […], "type": "encoded_text"}]}` flattened, like `to_ints()`. */
export function modelInputTokens(value: unknown, field: string): number[] {
  if (Array.isArray(value)) return tokenArray(value, field);
  if (!isObject(value) || !Array.isArray(value.chunks)) throw new ShapeError(`"${field}" must be token ids or a ModelInput {"chunks": [{"tokens": […]}]}`);
  const ids: number[] = [];
  value.chunks.forEach((chunk, k) => {
    if (!isObject(chunk) || (chunk.type !== undefined && chunk.type !== 'encoded_text')) {
      throw new ShapeError(`${field}.chunks[${k}]: only encoded_text chunks hold token ids (got ${jsonText(isObject(chunk) ? chunk.type : chunk)})`);
    }
    for (const id of tokenArray(chunk.tokens, `${field}.chunks[${k}].tokens`)) ids.push(id);
  });
  return ids;
}

/** A line's `prompt_length`, checked against its token count; -1 when it gives none (the grammar finds the end). */
export function promptLengthOf(value: Json, tokenCount: number): number {
  if (value.prompt_length === undefined) return -1;
  const length = value.prompt_length;
  if (typeof length !== 'number' || !Number.isInteger(length) || length < 0) throw new ShapeError(`prompt_length: expected a non-negative integer, got ${jsonText(length)}`);
  if (length > tokenCount) throw new ShapeError(`prompt_length ${length} is longer than the rollout (${tokenCount} tokens)`);
  return length;
}

/**
 * The flat shape `{"id", "tokens", "prompt_length"?, "mask"?, "options"?}` with its ids already read (the CLI's
 * byte reader reads them straight from the line). A mask one shorter than the tokens is in target space.
 */
export function flatRollout(value: Json, tokens: ArrayLike<number>, needMask = false): TokenRollout {
  const rollout: TokenRollout = { kind: 'tokens', id: value.id, tokens, promptLength: promptLengthOf(value, tokens.length), options: readOptions(value.options) };
  if (value.mask !== undefined) {
    const mask = maskValues(value.mask, 'mask');
    if (mask.length !== tokens.length && mask.length !== tokens.length - 1) {
      throw new ShapeError(`mask has ${mask.length} entries for ${tokens.length} tokens (expected ${tokens.length}, or ${tokens.length - 1} in target space)`);
    }
    rollout.given = { field: 'mask', values: mask, start: 0, shift: mask.length === tokens.length ? 0 : 1 };
  } else if (needMask) {
    throw new ShapeError('flat (tagmask): no mask to check, missing "mask"');
  }
  return rollout;
}

export interface ShapeSpec {
  name: ShapeName;
  /** Who writes it. */
  framework: string;
  /** Keys that must be there to read the token stream. */
  keys: string[];
  /** Keys holding the mask (needed by `check`). */
  maskKeys: string[];
  /** Keys that make the match more specific when present. */
  hints?: string[];
  /** Keys that train in the mask's stead when the mask is absent (tinker's `advantages`, `weights`): `check` reads them then. */
  signalKeys?: string[];
  read(value: Json, id: unknown, options: OptionValues): ShapedRollout[];
  /** The input line with its mask fields replaced by `masks` (one per rollout), in the framework's frame. */
  writeBack?(value: Json, rollouts: TokenRollout[], masks: ArrayLike<number>[]): Json;
}

/** A value in a rollout name built from a line's fields: as Python's f-string writes a str or int; anything else as JSON, never its own toString. */
const namePart = (value: unknown) => (value === undefined ? 'undefined' : idText(value));

const slice = (mask: ArrayLike<number>, start: number, end = mask.length) => Array.from({ length: Math.max(0, end - start) }, (_, i) => mask[start + i]);

/** A tinker datum, flat (`tagmask merge` output) or from a Datum's loss_fn_inputs: the model input and its shifted targets. */
function readTinkerDatum(value: Json, id: unknown, options: OptionValues, prefix = ''): ShapedRollout[] {
  if (value.model_input === undefined && value.tokens === undefined) throw new ShapeError('tinker (datum): missing "tokens" (or "model_input")');
  const input = value.model_input !== undefined ? modelInputTokens(value.model_input, 'model_input') : modelInputTokens(value.tokens, 'tokens');
  const targets = tokenArray(tinkerTensor(value.target_tokens, `${prefix}target_tokens`).data, `${prefix}target_tokens`);
  sameLength(targets, `${prefix}target_tokens`, input, 'input tokens');
  checkShiftedTargets(input, targets, `${prefix}target_tokens`);
  const tokens = targets.length ? [...input, targets[targets.length - 1]] : input;
  const flat = flatRollout({ id, prompt_length: value.prompt_length }, tokens);
  flat.options = options;
  // What tinker's losses weigh each target by (the mask itself never reaches them): 1 where it is not 0.
  const signals = TINKER_SIGNALS.filter((key) => value[key] != null)
    .map((key) => ({ field: `${prefix}${key}`, values: signalNumbers(tinkerTensor(value[key], `${prefix}${key}`), targets.length, `${prefix}${key}`).map((item) => (item !== 0 ? 1 : 0)) }));
  if (value.mask != null) {
    const mask = maskValues(tinkerTensor(value.mask, `${prefix}mask`).data, `${prefix}mask`);
    sameLength(mask, `${prefix}mask`, targets, 'target_tokens');
    flat.given = { field: `${prefix}mask`, values: mask, start: 0, shift: 1 };
    if (signals.length) flat.given.signals = signals;
  } else if (signals.length) {
    // No mask: what trains is the signal's nonzero set, checked in the 1 direction only.
    const [first, ...rest] = signals;
    flat.given = { field: first.field, values: first.values, start: 0, shift: 1, trainedOnly: true };
    if (rest.length) flat.given.signals = rest;
  }
  return [flat];
}

export const SHAPES: ShapeSpec[] = [
  {
    name: 'flat', framework: 'tagmask', keys: ['tokens'], maskKeys: ['mask'], hints: ['prompt_length'],
    read: (value) => [flatRollout(value, tokenArray(value.tokens, 'tokens'))],
    writeBack: (value, _rollouts, [mask]) => ({ ...value, mask: Array.from(mask) }),
  },
  {
    // A datum: `tokens` (or `model_input`) is the model input, all but the last token; targets are shifted by one.
    name: 'tinker', framework: 'tinker', keys: ['target_tokens'], maskKeys: ['mask'], hints: ['tokens', 'model_input', 'prompt_length'], signalKeys: [...TINKER_SIGNALS],
    read: readTinkerDatum,
    // What trains a datum is its advantages (tinker-cookbook strips mask before training): see src/io/tinker.ts.
    writeBack: (value, _rollouts, [mask]) => writeTinkerInputs(value, mask, ''),
  },
  {
    name: 'tinker', framework: 'tinker Datum', keys: ['model_input', 'loss_fn_inputs'], maskKeys: ['loss_fn_inputs.mask'], signalKeys: TINKER_SIGNALS.map((key) => `loss_fn_inputs.${key}`),
    read(value, id, options) {
      const inputs = value.loss_fn_inputs;
      if (!isObject(inputs)) throw new ShapeError('"loss_fn_inputs" must be an object');
      if (inputs.target_tokens === undefined) throw new ShapeError('tinker Datum: missing "loss_fn_inputs.target_tokens"');
      return readTinkerDatum({ model_input: value.model_input, target_tokens: inputs.target_tokens, mask: inputs.mask, advantages: inputs.advantages, weights: inputs.weights, prompt_length: value.prompt_length }, id, options, 'loss_fn_inputs.');
    },
    writeBack: (value, _rollouts, [mask]) => ({ ...value, loss_fn_inputs: writeTinkerInputs(value.loss_fn_inputs as Json, mask, 'loss_fn_inputs.') }),
  },
  {
    name: 'verl', framework: 'verl AgentLoopOutput', keys: ['prompt_ids', 'response_ids'], maskKeys: ['response_mask'],
    read: (value, id, options) => [promptResponse(id, options, tokenArray(value.prompt_ids, 'prompt_ids'), tokenArray(value.response_ids, 'response_ids'),
      value.response_mask === undefined ? undefined : maskValues(value.response_mask, 'response_mask'), 'response_mask')],
    writeBack: (value, [rollout], [mask]) => ({ ...value, response_mask: slice(mask, rollout.promptLength) }),
  },
  {
    name: 'verl-padded', framework: 'verl batch (padded)', keys: ['prompts', 'responses', 'attention_mask'], maskKeys: ['response_mask'], hints: ['input_ids'],
    read(value, id, options) {
      const prompts = tokenArray(value.prompts, 'prompts');
      const responses = tokenArray(value.responses, 'responses');
      const attention = maskValues(value.attention_mask, 'attention_mask');
      sameLength(attention, 'attention_mask', { length: prompts.length + responses.length }, 'prompts + responses');
      // Left padding on the prompt: its attention is 0…0 1…1; right padding on the response: 1…1 0…0.
      let promptStart = 0;
      while (promptStart < prompts.length && attention[promptStart] === 0) promptStart++;
      for (let i = promptStart; i < prompts.length; i++) if (attention[i] !== 1) throw new ShapeError(`attention_mask[${i}]: 0 inside the prompt (verl pads prompts on the left only)`);
      let responseLength = 0;
      while (responseLength < responses.length && attention[prompts.length + responseLength] === 1) responseLength++;
      for (let i = responseLength; i < responses.length; i++) if (attention[prompts.length + i] !== 0) throw new ShapeError(`attention_mask[${prompts.length + i}]: 1 after the response's padding began (verl pads responses on the right only)`);
      let mask: number[] | undefined;
      let padding: number[] | undefined;
      if (value.response_mask !== undefined) {
        const full = maskValues(value.response_mask, 'response_mask');
        sameLength(full, 'response_mask', responses, 'responses');
        mask = full.slice(0, responseLength);
        padding = full.slice(responseLength);
      }
      const rollout = promptResponse(id, options, prompts.slice(promptStart), responses.slice(0, responseLength), mask, 'response_mask');
      // The response's padding is not part of the stream, but its mask is still checked: a 1 there trains padding.
      if (rollout.given && padding?.includes(1)) rollout.given.padding = { values: padding, ids: responses.slice(responseLength) };
      return [rollout];
    },
    writeBack(value, [rollout], [mask]) {
      const responses = (value.responses as unknown[]).length;
      const own = slice(mask, rollout.promptLength);
      return { ...value, response_mask: own.concat(new Array<number>(responses - own.length).fill(0)) };
    },
  },
  {
    name: 'verifiers', framework: 'verifiers', keys: ['prompt_ids', 'prompt_mask', 'completion_ids'], maskKeys: ['completion_mask'],
    read(value, id, options) {
      const prompt = tokenArray(value.prompt_ids, 'prompt_ids');
      const promptMask = maskValues(value.prompt_mask, 'prompt_mask');
      sameLength(promptMask, 'prompt_mask', prompt, 'prompt_ids');
      const completion = tokenArray(value.completion_ids, 'completion_ids');
      const rollout: TokenRollout = { kind: 'tokens', id, tokens: prompt.concat(completion), promptLength: prompt.length, options };
      if (value.completion_mask !== undefined) {
        const completionMask = maskValues(value.completion_mask, 'completion_mask');
        sameLength(completionMask, 'completion_mask', completion, 'completion_ids');
        // The loss mask is prompt_mask + completion_mask over prompt_ids + completion_ids.
        rollout.given = { field: 'prompt_mask+completion_mask', values: promptMask.concat(completionMask), start: 0, shift: 0 };
      }
      return [rollout];
    },
    writeBack: (value, [rollout], [mask]) => ({ ...value, prompt_mask: slice(mask, 0, rollout.promptLength), completion_mask: slice(mask, rollout.promptLength) }),
  },
  {
    // GRPOTrainer's rows (TRL f2cd5771, trl/trainer/grpo_trainer.py `_generate_and_score_completions`): prompt_ids
    // left-padded with prompt_mask its attention mask (1 on the prompt, 0 on the padding); completion_ids
    // right-padded with completion_mask 1 up to the end of the completion (also attention: it is concatenated
    // with prompt_mask into attention_mask), 0 on padding and, with mask_truncated_completions, on a whole
    // truncated completion; tool_mask 0 on tool results, padded with 1. The loss mask is completion_mask * tool_mask.
    name: 'trl', framework: 'TRL', keys: ['prompt_ids', 'completion_ids'], maskKeys: ['completion_mask'], hints: ['tool_mask', 'prompt_mask'],
    read(value, id, options) {
      let prompt = tokenArray(value.prompt_ids, 'prompt_ids');
      if (value.prompt_mask !== undefined) {
        const attention = maskValues(value.prompt_mask, 'prompt_mask');
        sameLength(attention, 'prompt_mask', prompt, 'prompt_ids');
        let start = 0;
        while (start < attention.length && attention[start] === 0) start++;
        for (let i = start; i < attention.length; i++) if (attention[i] !== 1) throw new ShapeError(`prompt_mask[${i}]: 0 inside the prompt (TRL pads prompts on the left only; prompt_mask is their attention mask)`);
        prompt = prompt.slice(start);
      }
      const completion = tokenArray(value.completion_ids, 'completion_ids');
      let mask: number[] | undefined;
      let field = 'completion_mask';
      if (value.completion_mask !== undefined) {
        mask = maskValues(value.completion_mask, 'completion_mask');
        sameLength(mask, 'completion_mask', completion, 'completion_ids');
        if (value.tool_mask !== undefined) {
          // TRL trains completion_mask * tool_mask (tool_mask: 0 on tool results).
          const tool = maskValues(value.tool_mask, 'tool_mask');
          sameLength(tool, 'tool_mask', completion, 'completion_ids');
          mask = mask.map((bit, i) => bit * tool[i]);
          field = 'completion_mask*tool_mask';
        }
      }
      return [promptResponse(id, options, prompt, completion, mask, field)];
    },
    writeBack(value, [rollout], [mask]) {
      // prompt_mask and completion_mask are TRL's attention masks: never written. The action mask goes where TRL
      // reads a loss mask of its own: tool_mask (loss = completion_mask * tool_mask).
      return { ...value, tool_mask: slice(mask, rollout.promptLength) };
    },
  },
  {
    name: 'skyrl', framework: 'SkyRL GeneratorOutput', keys: ['prompt_token_ids', 'response_ids'], maskKeys: ['loss_masks'], hints: ['trajectory_ids'],
    read(value, id, options) {
      const batch = Array.isArray(value.prompt_token_ids) && value.prompt_token_ids.length > 0 && Array.isArray(value.prompt_token_ids[0]);
      if (!batch) {
        return [promptResponse(id, options, tokenArray(value.prompt_token_ids, 'prompt_token_ids'), tokenArray(value.response_ids, 'response_ids'),
          value.loss_masks === undefined ? undefined : maskValues(value.loss_masks, 'loss_masks'), 'loss_masks')];
      }
      // A whole GeneratorOutput: lists of lists, one entry per rollout.
      const prompts = value.prompt_token_ids as unknown[];
      const responses = value.response_ids;
      if (!Array.isArray(responses)) throw new ShapeError('"response_ids" must be a list of token id lists, like "prompt_token_ids"');
      sameLength(responses, 'response_ids', prompts, 'prompt_token_ids lists');
      const masks = value.loss_masks;
      if (masks !== undefined) {
        if (!Array.isArray(masks)) throw new ShapeError('"loss_masks" must be a list of mask lists');
        sameLength(masks, 'loss_masks', prompts, 'prompt_token_ids lists');
      }
      const trajectories = Array.isArray(value.trajectory_ids) ? value.trajectory_ids : [];
      return prompts.map((prompt, k) => {
        // TrajectoryID.to_string() is f"{instance_id}_{repetition_id}".
        const trajectory = trajectories[k];
        const name = isObject(trajectory) && trajectory.instance_id !== undefined ? `${namePart(trajectory.instance_id)}_${namePart(trajectory.repetition_id)}` : `${id === undefined ? '' : namePart(id)}#${k}`;
        return promptResponse(name, options, tokenArray(prompt, `prompt_token_ids[${k}]`), tokenArray(responses[k], `response_ids[${k}]`),
          masks === undefined ? undefined : maskValues((masks as unknown[])[k], `loss_masks[${k}]`), `loss_masks[${k}]`);
      });
    },
    writeBack(value, rollouts, masks) {
      const own = rollouts.map((rollout, k) => slice(masks[k], rollout.promptLength));
      const batch = Array.isArray(value.prompt_token_ids) && Array.isArray(value.prompt_token_ids[0]);
      return { ...value, loss_masks: batch ? own : own[0] };
    },
  },
  {
    name: 'slime', framework: 'slime Sample', keys: ['tokens', 'response_length'], maskKeys: ['loss_mask'],
    read(value, id, options) {
      const tokens = tokenArray(value.tokens, 'tokens');
      const length = value.response_length;
      if (typeof length !== 'number' || !Number.isInteger(length) || length < 0 || length > tokens.length) {
        throw new ShapeError(`response_length: expected an integer in [0, ${tokens.length}], got ${jsonText(length)}`);
      }
      const start = tokens.length - length;
      // slime's loss_mask None means every response token is trained.
      const mask = value.loss_mask === undefined ? undefined : value.loss_mask === null ? new Array<number>(length).fill(1) : maskValues(value.loss_mask, 'loss_mask');
      return [promptResponse(id ?? value.index, options, tokens.slice(0, start), tokens.slice(start), mask, 'loss_mask')];
    },
    writeBack: (value, [rollout], [mask]) => ({ ...value, loss_mask: slice(mask, rollout.promptLength) }),
  },
  {
    name: 'openrlhf', framework: 'OpenRLHF Experience', keys: ['sequences'], maskKeys: ['action_mask'],
    read(value, id, options) {
      const tokens = tokenArray(value.sequences, 'sequences');
      const rollout: TokenRollout = { kind: 'tokens', id, tokens, promptLength: -1, options };
      if (value.action_mask !== undefined) {
        const mask = maskValues(value.action_mask, 'action_mask');
        if (mask.length !== tokens.length - 1) throw new ShapeError(`action_mask has ${mask.length} entries for ${tokens.length} sequences (OpenRLHF keeps mask[1:]: expected ${tokens.length - 1})`);
        rollout.given = { field: 'action_mask', values: mask, start: 0, shift: 1 };
      }
      return [rollout];
    },
    writeBack: (value, _rollouts, [mask]) => ({ ...value, action_mask: slice(mask, 1) }),
  },
  {
    name: 'areal', framework: 'AReaL', keys: ['input_ids'], maskKeys: ['loss_mask'],
    read(value, id, options) {
      const tokens = tokenArray(value.input_ids, 'input_ids');
      const rollout: TokenRollout = { kind: 'tokens', id, tokens, promptLength: -1, options };
      if (value.loss_mask !== undefined) {
        const mask = maskValues(value.loss_mask, 'loss_mask');
        sameLength(mask, 'loss_mask', tokens, 'input_ids');
        rollout.given = { field: 'loss_mask', values: mask, start: 0, shift: 0 };
      }
      return [rollout];
    },
    writeBack: (value, _rollouts, [mask]) => ({ ...value, loss_mask: Array.from(mask) }),
  },
  {
    name: 'prime-rl', framework: 'prime-rl token export', keys: ['token_ids', 'position_ids'], maskKeys: ['loss_mask'],
    read(value, id, options) {
      const tokens = tokenArray(value.token_ids, 'token_ids');
      const positions = tokenArray(value.position_ids, 'position_ids');
      sameLength(positions, 'position_ids', tokens, 'token_ids');
      const mask = value.loss_mask === undefined ? undefined : maskValues(value.loss_mask, 'loss_mask');
      if (mask) sameLength(mask, 'loss_mask', tokens, 'token_ids');
      // Packed: a sample starts wherever position_ids restarts at 0.
      const starts: number[] = [];
      for (let i = 0; i < positions.length; i++) {
        if (positions[i] === 0) starts.push(i);
        else if (i === 0 || positions[i] !== positions[i - 1] + 1) throw new ShapeError(`position_ids[${i}]: ${positions[i]} neither continues the sample (${i ? positions[i - 1] + 1 : 0}) nor restarts at 0`);
      }
      const name = id ?? (value.step !== undefined ? `step${namePart(value.step)}/rank${namePart(value.rank)}/${namePart(value.export_sequence_idx)}` : '');
      return starts.map((start, k) => {
        const end = k + 1 < starts.length ? starts[k + 1] : tokens.length;
        const rollout: TokenRollout = { kind: 'tokens', id: `${namePart(name)}#${k}`, tokens: tokens.slice(start, end), promptLength: -1, options };
        if (mask) rollout.given = { field: 'loss_mask', values: mask.slice(start, end), start: 0, shift: 0 };
        return rollout;
      });
    },
    // prime-rl writes the mask as booleans (weights, from --observation-weight, stay numbers).
    writeBack: (value, _rollouts, masks) => {
      const flat = masks.flatMap((mask) => Array.from(mask));
      return { ...value, loss_mask: flat.every((bit) => bit === 0 || bit === 1) ? flat.map((bit) => bit === 1) : flat };
    },
  },
  {
    name: 'text-io', framework: 'verl rollout_data_dir (text)', keys: ['input', 'output'], maskKeys: [],
    read: (value, id, options) => [{ kind: 'text', id: id ?? value.request_id, options, prompt: textField(value.input, 'input'), text: textField(value.output, 'output'), fields: ['input', 'output'] }],
  },
  {
    name: 'text-prompt', framework: 'prompt / completion text', keys: ['prompt', 'completion'], maskKeys: [],
    read: (value, id, options) => [{ kind: 'text', id, options, prompt: textField(value.prompt, 'prompt'), text: textField(value.completion, 'completion'), fields: ['prompt', 'completion'] }],
  },
  {
    name: 'text', framework: 'text', keys: ['text'], maskKeys: [],
    read: (value, id, options) => [{ kind: 'text', id, options, text: textField(value.text, 'text'), fields: ['text'] }],
  },
  {
    name: 'messages', framework: 'chat messages', keys: ['messages'], maskKeys: ['messages'], hints: ['tools'],
    read(value, id, options) {
      if (!Array.isArray(value.messages)) throw new ShapeError('"messages" must be an array of {"role", "content"} objects');
      value.messages.forEach((message, i) => {
        if (!isObject(message) || typeof message.role !== 'string') throw new ShapeError(`messages[${i}]: expected an object with a "role"`);
      });
      if (value.tools !== undefined && !Array.isArray(value.tools)) throw new ShapeError('"tools" must be an array');
      return [{ kind: 'messages', id, options, messages: value.messages as Json[], tools: value.tools as unknown[] | undefined }];
    },
  },
];

function textField(value: unknown, field: string): string {
  if (typeof value !== 'string') throw new ShapeError(`"${field}" must be a string`);
  return value;
}

export const SHAPE_NAMES: ShapeName[] = [...new Set(SHAPES.map((shape) => shape.name))];

const has = (value: Json, key: string): boolean => {
  const dot = key.indexOf('.');
  // Called for every shape on every line: plain keys without splitting.
  if (dot < 0) return key in value;
  const head = key.slice(0, dot);
  return head in value && isObject(value[head]) && has(value[head] as Json, key.slice(dot + 1));
};

/** Shapes of that name (tinker has two spellings: the flat datum and tinker's own Datum). */
const shapesNamed = (name: ShapeName) => SHAPES.filter((shape) => shape.name === name);

/** How well a line's keys fit a shape: its reading keys all present, then the most keys matched. */
const ALL_KEYS = new Map<ShapeSpec, string[]>();
function score(shape: ShapeSpec, value: Json): number {
  let keys = ALL_KEYS.get(shape);
  if (!keys) ALL_KEYS.set(shape, keys = [...new Set([...shape.keys, ...shape.maskKeys, ...(shape.hints ?? [])])]);
  let points = 0;
  for (const key of keys) if (has(value, key)) points++;
  return points;
}

/** The keys any shape reads at the top level, and the heads of dotted keys (`ob.chunks` → `ob`). */
const SHAPE_KEYS = SHAPES.flatMap((shape) => [...shape.keys, ...shape.maskKeys, ...(shape.hints ?? []), ...(shape.signalKeys ?? [])]);
const TOP_KEYS = new Set(SHAPE_KEYS.filter((key) => !key.includes('.')));
const DOTTED_HEADS = new Set(SHAPE_KEYS.filter((key) => key.includes('.')).map((key) => key.slice(0, key.indexOf('.'))));
/** Shapes already found, by the shape keys a line holds: most files repeat one set of keys on every line. */
const detected = new Map<string, ShapeSpec>();
const DETECTED_KEPT = 256;

/**
 * Which shape a line is (by its keys), or an error naming the closest shapes and what they miss.
 * Where the line has no key whose nested keys matter, the answer depends only on which shape keys it holds,
 * so it is remembered by them (the per-line scoring was ~10% of `tagmask mask` on flat JSONL: --cpu-prof).
 */
export function detectShape(value: Json, needMask = false): ShapeSpec {
  let signature = needMask ? 'm' : '-';
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    if (DOTTED_HEADS.has(key)) { signature = ''; break; }
    if (TOP_KEYS.has(key)) signature += `,${key}`;
  }
  if (signature) {
    const known = detected.get(signature);
    if (known) return known;
    const found = detectByScore(value, needMask);
    if (detected.size >= DETECTED_KEPT) detected.clear();
    detected.set(signature, found);
    return found;
  }
  return detectByScore(value, needMask);
}

function detectByScore(value: Json, needMask: boolean): ShapeSpec {
  let best: ShapeSpec | undefined;
  let bestScore = -1;
  // Every shape's score, once (this runs for every line).
  const scores = SHAPES.map((shape) => score(shape, value));
  const fits = SHAPES.map((shape) => shape.keys.every((key) => has(value, key)));
  SHAPES.forEach((shape, k) => {
    if (fits[k] && scores[k] > bestScore) { best = shape; bestScore = scores[k]; }
  });
  let richer = false;
  SHAPES.forEach((_, k) => { if (!fits[k] && scores[k] > 0 && scores[k] > bestScore) richer = true; });
  if (best && !richer) {
    if (needMask) requireMask(best, value);
    return best;
  }
  // Closest: the shapes sharing the most keys with the line (more than the shape it fits, if any), and what each misses.
  const near = SHAPES.map((shape, k) => ({ shape, points: scores[k] }))
    .filter((item, k) => item.points > 0 && item.points > bestScore && !fits[k])
    .sort((a, b) => b.points - a.points);
  // A line that fits a plain shape but shares more keys with a richer one (`tokens` + `loss_mask` is a
  // slime Sample without its `response_length`) is that richer shape with a key missing, not the plain one.
  if (!near.length) {
    const known = SHAPES.map((shape) => `${shape.name} (${shape.keys.map((key) => `"${key}"`).join(', ')})`).join(', ');
    const keys = Object.keys(value).slice(0, 8).map((key) => `"${key}"`).join(', ');
    throw new ShapeError(`fits no rollout shape (keys ${keys || 'none'}); known shapes: ${known} (--format NAME chooses one)`);
  }
  const top = near.filter((item) => item.points === near[0].points).slice(0, 3);
  const missing = top.map(({ shape }) => `${shape.name} (${shape.framework}) is missing ${shape.keys.filter((key) => !has(value, key)).map((key) => `"${key}"`).join(', ')}`);
  throw new ShapeError(`fits no rollout shape: ${missing.join('; ')}`);
}

function requireMask(shape: ShapeSpec, value: Json) {
  const missing = shape.maskKeys.filter((key) => !has(value, key));
  // A tinker datum without its mask still says what trains: its advantages (or weights).
  if (missing.length && shape.signalKeys?.some((key) => has(value, key))) return;
  if (shape.maskKeys.length === 0) throw new ShapeError(`${shape.name} (${shape.framework}) carries no mask to check: check compares the grammar's mask with the one a line brings`);
  if (missing.length) throw new ShapeError(`${shape.name} (${shape.framework}): no mask to check, missing ${missing.map((key) => `"${key}"`).join(', ')}`);
}

/** The shape `--format NAME` names, checked against the line: an error names the shape and the missing key. */
function chosenShape(name: ShapeName, value: Json, needMask: boolean): ShapeSpec {
  const candidates = shapesNamed(name);
  if (!candidates.length) throw new ShapeError(`unknown format "${name}"; known: ${SHAPE_NAMES.join(', ')}`);
  const fitting = candidates.find((shape) => shape.keys.every((key) => has(value, key)));
  if (!fitting) {
    const shape = candidates[0];
    throw new ShapeError(`${name} (${shape.framework}): missing ${shape.keys.filter((key) => !has(value, key)).map((key) => `"${key}"`).join(', ')}`);
  }
  if (needMask) requireMask(fitting, value);
  return fitting;
}

export function isShapeName(name: string): name is ShapeName {
  return (SHAPE_NAMES as string[]).includes(name);
}

/**
 * Read one parsed line (JSON object or Parquet row) in its shape: detected from its keys, or `format`.
 * `needMask`: the line must bring a mask (for `check`).
 */
export function readShaped(value: unknown, format?: ShapeName, needMask = false): ShapedLine & { spec: ShapeSpec } {
  if (!isObject(value)) throw new ShapeError('a rollout line must be a JSON object');
  let spec = format ? chosenShape(format, value, needMask) : detectShape(value, needMask);
  if (!format && spec.name === 'verifiers' && isTrlRow(value)) spec = TRL;
  const options = readOptions(value.options);
  const rollouts = spec.read(value, value.id, options);
  // A mask key that is there but null (a Parquet struct's null field reads so) brings no mask: check says so here.
  if (needMask && rollouts.some((rollout) => rollout.kind === 'tokens' && !rollout.given)) {
    throw new ShapeError(`${spec.name} (${spec.framework}): no mask to check, ${spec.maskKeys.map((key) => `"${key}"`).join(', ')} is null`);
  }
  return { shape: spec.name, spec, rollouts };
}

const TRL = SHAPES.find((shape) => shape.name === 'trl')!;

/**
 * verifiers' `prompt_mask` is a loss mask over the prompt (all 0); TRL's GRPO rows carry a `prompt_mask` too, its
 * attention mask (left padding 0, then 1 on every prompt token). A row with TRL's `tool_mask`, or whose prompt_mask
 * is an attention mask (0…0 1…1, ending in 1), is TRL's; 1s elsewhere are a verifiers loss mask gone wrong, to check.
 */
function isTrlRow(value: Json): boolean {
  if (value.tool_mask !== undefined) return true;
  const mask = value.prompt_mask;
  if (!Array.isArray(mask) || !mask.length) return false;
  const one = (bit: unknown) => bit === 1 || bit === true;
  let k = 0;
  while (k < mask.length && !one(mask[k])) k++;
  if (k === mask.length) return false;
  for (; k < mask.length; k++) if (!one(mask[k])) return false;
  return true;
}

/** The line with its mask written back in its own frame and field names (`--out-format`). */
export function writeBackShaped(line: ShapedLine & { spec: ShapeSpec }, value: Json, masks: ArrayLike<number>[]): Json {
  if (!line.spec.writeBack) throw new ShapeError(`${line.shape} has no mask field of its own to write back`);
  return line.spec.writeBack(value, line.rollouts as TokenRollout[], masks);
}

/** The given mask laid over the whole stream (0 where the framework's mask does not reach), and its shift. */
export function givenInStream(rollout: TokenRollout): { mask: number[]; shift: 0 | 1 } | undefined {
  const given = rollout.given;
  if (!given) return undefined;
  const length = rollout.tokens.length - given.shift;
  const mask = new Array<number>(length).fill(0);
  for (let i = 0; i < given.values.length; i++) mask[given.start + i] = given.values[i];
  return { mask, shift: given.shift };
}

/** Where stream token `token` sits in the framework's own mask field: `response_mask[3]`. */
export function fieldIndex(given: GivenMask, token: number): string {
  return `${given.field}[${token - given.shift - given.start}]`;
}
