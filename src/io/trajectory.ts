/**
 * Trajectory lines (`tagmask merge` input, suites' `trajectories.jsonl`) and datum lines (its output).
 */
import type { Action, Datum, Trajectory, Transition } from '../merge.ts';
import { isObject, tokenArray as readTokenArray } from './json.ts';

export interface ParsedTrajectoryLine {
  id: unknown;
  trajectory: Trajectory;
  advantage: number;
}

/** tinker's datums hold float32: a value beyond its range would become infinity (JSON null) on the way out. */
const fitsFloat32 = (x: number) => Number.isFinite(Math.fround(x));
const FLOAT32_PROBLEM = (x: number) => `${x} does not fit in float32 (tinker's tensors; largest magnitude ${3.4028234663852886e38})`;


/** `.key` for identifier-like keys, `["key"]` otherwise (e.g. "stop/completed"). */
function keyPath(base: string, key: string): string {
  return /^[A-Za-z_$][\w$]*$/.test(key) ? `${base}.${key}` : `${base}[${JSON.stringify(key)}]`;
}

/**
 * Validate one input line:
 * `{"id", "transitions": [{"ob": [ints], "ac": {"tokens": [ints], "logprobs"?: [numbers]},
 *   "reward"?, "episode_done"?, "metrics"?}...], "advantage"?: number}`.
 * `ac.maybe_logprobs` (tinker's field name, possibly null) is accepted for
 * `ac.logprobs`. Unknown keys (e.g. `final_ob`, `logs`) are ignored, as
 * trajectoryToData does not use them. Errors name the JSON path, prefixed by
 * `where` (e.g. "input.jsonl:3").
 */
export function parseTrajectoryLine(value: unknown, where: string): ParsedTrajectoryLine {
  const fail = (path: string, problem: string): never => {
    const prefix = where ? `${where}: ` : '';
    throw new Error(path ? `${prefix}${path}: ${problem}` : `${prefix}${problem}`);
  };

  // The same id check as every other reader: an id mask would reject is rejected here too.
  const tokenArray = (raw: unknown, path: string): number[] => {
    try {
      return readTokenArray(raw, path);
    } catch (error) {
      return fail('', (error as Error).message);
    }
  };

  const chunkTokens = (raw: Record<string, unknown>, path: string): number[] => {
    if (!Array.isArray(raw.chunks)) return fail(path, 'expected token ids or a ModelInput {"chunks": [{"tokens": [...]}]}');
    const ids: number[] = [];
    raw.chunks.forEach((chunk: unknown, k: number) => {
      if (!isObject(chunk) || (chunk.type !== undefined && chunk.type !== 'encoded_text')) {
        fail(`${path}.chunks[${k}]`, 'only encoded_text chunks hold token ids (an image chunk has no ids to merge)');
      }
      for (const id of tokenArray((chunk as Record<string, unknown>).tokens, `${path}.chunks[${k}].tokens`)) ids.push(id);
    });
    return ids;
  };

  const numberArray = (raw: unknown, path: string): number[] => {
    if (!Array.isArray(raw)) return fail(path, 'expected an array of numbers');
    raw.forEach((x, i) => {
      if (typeof x !== 'number' || !Number.isFinite(x)) fail(`${path}[${i}]`, 'expected a finite number');
      if (!fitsFloat32(x)) fail(`${path}[${i}]`, FLOAT32_PROBLEM(x));
    });
    return raw as number[];
  };

  if (!isObject(value)) return fail('', 'expected a JSON object');
  if (!('id' in value)) fail('id', 'missing');

  let advantage = 1;
  if (value.advantage !== undefined) {
    if (typeof value.advantage !== 'number' || !Number.isFinite(value.advantage)) {
      fail('advantage', 'expected a finite number');
    }
    if (!fitsFloat32(value.advantage as number)) fail('advantage', FLOAT32_PROBLEM(value.advantage as number));
    advantage = value.advantage as number;
  }

  if (!Array.isArray(value.transitions)) fail('transitions', 'expected an array');
  const transitions = (value.transitions as unknown[]).map((raw, k): Transition => {
    const path = `transitions[${k}]`;
    if (!isObject(raw)) return fail(path, 'expected an object');

    // tinker's ModelInput JSON ({"chunks": [{"tokens": [...], "type": "encoded_text"}]}) is flattened as its
    // to_ints() does (tinker_cookbook/display.py reads datum.model_input.chunks the same way).
    const ob = isObject(raw.ob) ? chunkTokens(raw.ob, `${path}.ob`) : tokenArray(raw.ob, `${path}.ob`);

    if (!isObject(raw.ac)) return fail(`${path}.ac`, 'expected an object');
    const tokens = tokenArray(raw.ac.tokens, `${path}.ac.tokens`);
    const hasLogprobs = raw.ac.logprobs !== undefined && raw.ac.logprobs !== null;
    const hasMaybe = raw.ac.maybe_logprobs !== undefined && raw.ac.maybe_logprobs !== null;
    if (hasLogprobs && hasMaybe) fail(`${path}.ac`, 'give "logprobs" or "maybe_logprobs", not both');
    const logprobsKey = hasMaybe ? 'maybe_logprobs' : 'logprobs';
    const ac: Action = { tokens };
    if (hasLogprobs || hasMaybe) {
      const lp = numberArray(raw.ac[logprobsKey], `${path}.ac.${logprobsKey}`);
      if (lp.length !== tokens.length) {
        fail(`${path}.ac.${logprobsKey}`, `expected ${tokens.length} numbers (one per token), got ${lp.length}`);
      }
      ac.logprobs = lp;
    }

    const transition: Transition = { ob, ac };
    if (raw.reward !== undefined) {
      if (typeof raw.reward !== 'number' || !Number.isFinite(raw.reward)) {
        fail(`${path}.reward`, 'expected a finite number');
      }
      transition.reward = raw.reward as number;
    }
    if (raw.episode_done !== undefined) {
      if (typeof raw.episode_done !== 'boolean') fail(`${path}.episode_done`, 'expected a boolean');
      transition.episode_done = raw.episode_done as boolean;
    }
    if (raw.metrics !== undefined) {
      if (!isObject(raw.metrics)) return fail(`${path}.metrics`, 'expected an object');
      const metrics: Record<string, number> = {};
      for (const [key, metric] of Object.entries(raw.metrics)) {
        // Python's float(True) == 1.0, so a boolean flag counts like 0/1.
        if (typeof metric === 'boolean') metrics[key] = metric ? 1 : 0;
        else if (typeof metric === 'number' && Number.isFinite(metric)) metrics[key] = metric;
        else fail(keyPath(`${path}.metrics`, key), 'expected a number');
      }
      transition.metrics = metrics;
    }
    return transition;
  });

  return { id: value.id, trajectory: { transitions }, advantage };
}

/**
 * One output line, `{"id","datum","tokens","target_tokens","logprobs","advantages","mask"}`, newline-terminated.
 * `idJson` is the id already written as JSON. tinker's mask/advantages are float tensors (0.0/1.0); here they
 * are plain JSON numbers (0, 1, or the advantage value), and a float32 is written as the double it is
 * (-0.3 as -0.30000001192092896, what tinker's `.tolist()` gives), the same text JSON.stringify gives.
 */
export function datumJsonLine(idJson: string, index: number, datum: Datum): string {
  return `{"id":${idJson},"datum":${index},"tokens":[${datum.tokens.join(',')}],"target_tokens":[${datum.target_tokens.join(',')}],` +
    `"logprobs":[${datum.logprobs.join(',')}],"advantages":[${datum.advantages.join(',')}],"mask":[${datum.mask.join(',')}]}\n`;
}

/** One datum as a row of plain arrays (`{"datum","tokens",…,"mask"}`, no id), for writers that take values (Parquet). */
export function datumRow(index: number, datum: Datum): { datum: number; tokens: number[]; target_tokens: number[]; logprobs: number[]; advantages: number[]; mask: number[] } {
  return {
    datum: index,
    tokens: Array.from(datum.tokens),
    target_tokens: Array.from(datum.target_tokens),
    logprobs: Array.from(datum.logprobs),
    advantages: Array.from(datum.advantages),
    mask: Array.from(datum.mask),
  };
}
