/** `check`: the mask a rollout brings against the grammar's, in the framework's own frame and field names. */
import type { MaskResult } from '../masker.ts';
import { compareMasks, type Disagreement } from '../conformance.ts';
import { fieldIndex, givenInStream } from './shapes.ts';
import type { MaskContext, Prepared } from './prepare.ts';

/**
 * `check` in the framework's own frame: the mask the rollout brings against the grammar's, over the positions
 * the framework's mask covers (a response-only mask is compared on the response; OpenRLHF's shifted
 * action_mask in target space). Each run also names where it sits in the framework's field
 * (`response_mask[12]`). Undefined when the rollout brings no mask.
 */
export function auditPrepared(context: MaskContext, prepared: Prepared, result: MaskResult): Array<Disagreement & { field: string }> | undefined {
  const given = prepared.rollout.given;
  const stream = givenInStream(prepared.rollout);
  if (!given || !stream) return undefined;
  const from = given.start + given.shift;
  const to = from + given.values.length;
  return compareMasks(context.tokenizer.table, prepared.rollout.tokens, stream.mask, result, stream.shift)
    .flatMap((run) => {
      // Outside what the framework's mask covers there is nothing to compare (its prompt, in most frames).
      const start = Math.max(run.start, from);
      const end = Math.min(run.end, to);
      return start < end ? [{ ...run, start, end, field: fieldIndex(given, start) }] : [];
    });
}
