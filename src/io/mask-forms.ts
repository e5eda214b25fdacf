/** The output forms of a mask: `--mask-format runs`, `--observation-weight`, `--spans chars`. */
import type { Span } from '../scan/spans.ts';
import type { ShapeName } from './shapes.ts';
import { tokenCharOffsets } from './text.ts';

export type MaskFormat = 'list' | 'runs';

/** Output options of `mask` (check writes verdicts): see the CLI's flags of the same names. */
export interface OutputOptions {
  /** `--format NAME`: every line is read in this shape instead of detecting it from its keys. */
  format?: ShapeName;
  /** `--mask-format runs`: the action runs `[[start, end], …]` instead of the 0/1 list. */
  maskFormat?: MaskFormat;
  /** `--observation-weight w`: weights (1 on action, w elsewhere) instead of 0/1. */
  observationWeight?: number;
  /** `--spans chars`: spans of text and messages rollouts also carry character offsets into the text. */
  charSpans?: boolean;
  /** `--out-format`: each input line back, its own mask fields replaced (SkyRL loss_masks, OpenRLHF's shifted action_mask…). */
  outFormat?: boolean;
}

/** `[[start, end], …]` of the action runs (end exclusive). */
export function actionRuns(mask: ArrayLike<number>): Array<[number, number]> {
  const runs: Array<[number, number]> = [];
  for (let i = 0; i < mask.length; i++) {
    if (mask[i] !== 1) continue;
    let end = i + 1;
    while (end < mask.length && mask[end] === 1) end++;
    runs.push([i, end]);
    i = end;
  }
  return runs;
}

/** Weights instead of 0/1: 1 on action, `observationWeight` elsewhere (Agent-R1-style world-model loss). */
export function weighted(mask: ArrayLike<number>, observationWeight: number): number[] {
  return Array.from(mask, (bit) => (bit === 1 ? 1 : observationWeight));
}

/** Spans with character offsets into the source text (`chars: [start, end]`, code points), where they map exactly. */
export function spansWithChars(spans: Span[], offsets: Int32Array | undefined): Array<Span & { chars?: [number, number] }> {
  if (!offsets) return spans;
  return spans.map((span) => ({ ...span, chars: [offsets[span.start], offsets[span.end]] as [number, number] }));
}

export { tokenCharOffsets };
