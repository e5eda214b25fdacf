/**
 * tinker datums: their tensors, and what `--out-format` writes back into them.
 *
 * What trains a tinker datum is read in tinker-cookbook 9dfcc3a2 and tinker d595dc2b:
 * - `tinker_cookbook/rl/data_processing.py` `trajectory_to_data` builds `loss_fn_inputs{target_tokens, logprobs,
 *   advantages, mask}`, every tensor in target space (the full sequence's `[1:]`); every action token of a
 *   trajectory gets the one scalar `traj_advantage`, observation tokens 0 (and 0 with mask 0 for a parse-error
 *   turn it masks).
 * - `tinker_cookbook/rl/train.py` `_remove_mask` drops `mask` before `forward_backward`: the RL losses
 *   (`importance_sampling`, `ppo`, `cispo`: `tutorials/202_loss_functions.py` lists their inputs as
 *   `target_tokens, logprobs, advantages`) weigh each token by its advantage, so a token trains exactly where its
 *   advantage is not 0. `cross_entropy` weighs by `weights` the same way. `mask` only feeds metrics and the KL
 *   penalty (`rl/metrics.py`).
 * - tinker `src/tinker/types/tensor_data.py`: a TensorData is `{data (flat list), dtype ("int64" | "float32"),
 *   shape?, sparse_crow_indices?, sparse_col_indices?}`; the sparse (CSR) form is for 2-D tensors only.
 * - `tinker_cookbook/supervised/common.py` `create_rightshifted_model_input_and_leftshifted_targets`: the input
 *   is the sequence without its last token and the targets are the sequence without its first, so
 *   `target_tokens[i]` is input token `i + 1`.
 */
import { isObject, jsonText, ShapeError } from './json.ts';

type Json = Record<string, unknown>;

/** A datum tensor as it came: a plain list, or a TensorData whose other fields (dtype, shape) go back unchanged. */
export interface Tensor {
  data: unknown[];
  container?: Json;
}

/** A tinker TensorData (`{"data", "dtype", "shape"}`) or a plain list; a sparse or non-1-D tensor is an error naming `field`. */
export function tinkerTensor(value: unknown, field: string): Tensor {
  if (Array.isArray(value)) return { data: value };
  if (!isObject(value) || !Array.isArray(value.data)) throw new ShapeError(`${field}: expected a list or a TensorData {"data": […], "dtype", "shape"}`);
  const count = value.data.length;
  if (value.sparse_crow_indices != null || value.sparse_col_indices != null) {
    throw new ShapeError(`${field}: a sparse (CSR) TensorData; a datum's tensors are 1-D and dense (tinker makes CSR of 2-D tensors only)`);
  }
  const shape = value.shape;
  const size = Array.isArray(shape) && shape.length === 1 ? shape[0] : undefined;
  if (shape != null && !((typeof size === 'number' || typeof size === 'bigint') && Number(size) === count)) {
    throw new ShapeError(`${field}.shape is ${jsonText(shape)} for ${count} values: a datum's tensors are 1-D ([${count}])`);
  }
  if (value.dtype != null && value.dtype !== 'int64' && value.dtype !== 'float32') {
    throw new ShapeError(`${field}.dtype: expected "int64" or "float32" (tinker's TensorDtype), got ${jsonText(value.dtype)}`);
  }
  return { data: value.data, container: value };
}

/** The tensor with new values, in the form it came in (a TensorData keeps its dtype and shape). */
function rewrap(tensor: Tensor, values: number[], field: string): unknown {
  if (!tensor.container) return values;
  if (tensor.container.dtype === 'int64') {
    const at = values.findIndex((item) => !Number.isInteger(item));
    if (at >= 0) throw new ShapeError(`${field}[${at}]: ${values[at]} does not fit this int64 TensorData (a weighted mask needs float32)`);
  }
  return { ...tensor.container, data: values };
}

/** The datum's targets must be its input shifted by one, or its mask cannot be read against its tokens. */
export function checkShiftedTargets(input: ArrayLike<number>, targets: ArrayLike<number>, field: string): void {
  for (let i = 0; i + 1 < input.length; i++) {
    if (targets[i] !== input[i + 1]) {
      throw new ShapeError(`${field}[${i}] is ${targets[i]} but input token ${i + 1} is ${input[i + 1]}: a tinker datum's targets are its input shifted by one (target_tokens[i] = input[i + 1]), so this datum's mask does not say which tokens train`);
    }
  }
}

/** A tensor's values as finite numbers, one per target; anything else is an error naming `field[i]`. */
export function signalNumbers(tensor: Tensor, length: number, field: string): number[] {
  if (tensor.data.length !== length) throw new ShapeError(`${field} has ${tensor.data.length} entries for ${length} target_tokens`);
  return tensor.data.map((item, i) => {
    if (typeof item !== 'number' || !Number.isFinite(item)) throw new ShapeError(`${field}[${i}]: expected a number, got ${jsonText(item)}`);
    return item;
  });
}

/**
 * A training signal (`advantages` or `weights`) under the new mask (target space, 0/1 or weights): 0 where the mask
 * is 0; where the datum trained the token already, its own value (times the mask's weight); where the mask trains a
 * token the datum gave 0, the one value the datum's trained tokens share (trajectory_to_data gives a trajectory's
 * action tokens one advantage). When they share none (per-token values, or nothing trained), that token's line fails.
 */
function signalUnder(values: number[], given: number[] | undefined, mask: number[], field: string): number[] {
  const trained = (i: number) => values[i] !== 0 || (given !== undefined && given[i] !== 0);
  let shared: number | undefined;
  let several = false;
  for (let i = 0; i < values.length; i++) {
    if (given ? given[i] === 0 : values[i] === 0) continue;
    if (shared === undefined) shared = values[i];
    else if (!Object.is(shared, values[i])) several = true;
  }
  return mask.map((weight, i) => {
    if (weight === 0) return 0;
    if (trained(i)) return values[i] * weight;
    if (shared === undefined || several) {
      throw new ShapeError(`${field}[${i}]: the mask trains target ${i} (token ${i + 1}), which this datum gives ${field.endsWith('weights') ? 'weight' : 'advantage'} 0, and its trained targets ${shared === undefined ? 'are none' : 'hold different values'}: there is no one value to give it (trajectory_to_data gives every action token of a trajectory the same advantage)`);
    }
    return shared * weight;
  });
}

/** What tinker's losses weigh each target token by: the RL losses `advantages`, cross_entropy `weights`. */
export const TINKER_SIGNALS = ['advantages', 'weights'] as const;

/**
 * A datum's loss inputs (`loss_fn_inputs`, or the flat datum itself) with the mask written back so that what
 * trains is what it says: `advantages` and `weights` (what tinker's losses weigh tokens by) 0 where the mask is 0
 * (see signalUnder), and `mask` rewritten where the datum has one (or has no signal at all). `mask` is the stream's
 * mask; the datum's tensors are in target space (its `[1:]`). `prefix` names the fields (`loss_fn_inputs.`).
 */
export function writeTinkerInputs(inputs: Json, streamMask: ArrayLike<number>, prefix: string): Json {
  const mask = Array.from({ length: Math.max(0, streamMask.length - 1) }, (_, i) => streamMask[i + 1]);
  const out: Json = { ...inputs };
  const givenTensor = inputs.mask != null ? tinkerTensor(inputs.mask, `${prefix}mask`) : undefined;
  const given = givenTensor ? signalNumbers(givenTensor, mask.length, `${prefix}mask`) : undefined;
  let signal = false;
  for (const key of TINKER_SIGNALS) {
    if (inputs[key] == null) continue;
    signal = true;
    const field = `${prefix}${key}`;
    const tensor = tinkerTensor(inputs[key], field);
    out[key] = rewrap(tensor, signalUnder(signalNumbers(tensor, mask.length, field), given, mask, field), field);
  }
  if (givenTensor) out.mask = rewrap(givenTensor, mask, `${prefix}mask`);
  else if (!signal) out.mask = mask;
  return out;
}
