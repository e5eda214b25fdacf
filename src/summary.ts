/** What a run over rollouts counts (mask, check, show), and how one masked rollout is counted. */
import type { MaskResult } from './masker.ts';

export interface RunSummary {
  rollouts: number;
  failed: number;
  tokens: number;
  actionTokens: number;
  diagnostics: Map<string, number>;
  disagreeing: number;
  /** check: disagreeing runs by direction ("trains tokens the model did not sample", "leaves model tokens untrained"). */
  directions: Map<string, number>;
  /** check: masks one shorter than their tokens, read in target space. */
  targetFrame: number;
  /** check: rollouts whose whole mask follows a known pattern, by pattern code (src/patterns.ts). */
  patterns?: Map<string, number>;
  /** check: disagreeing rollouts that agree under another option value, by `--set` flag ("template_think=0"). */
  hints?: Map<string, number>;
  /** check: rollouts with a disagreeing run holding each part, by part code (src/conformance.ts PartCode). */
  parts?: Map<string, number>;
}

/** A hint as the `--set` value that applies it: "template_think=0". */
export const hintFlag = (hint: { option: string; value: number | null }) => `${hint.option}=${hint.value}`;

/** What `runRollouts` reports progress to (the CLI's terminal line): bytes read, rollouts and tokens so far. */
export interface Progress {
  update(bytes: number, rollouts: number, tokens: number): void;
  done(): void;
}

export function newSummary(): RunSummary {
  return { rollouts: 0, failed: 0, tokens: 0, actionTokens: 0, diagnostics: new Map(), disagreeing: 0, directions: new Map(), targetFrame: 0, patterns: new Map(), hints: new Map(), parts: new Map() };
}

export function record(summary: RunSummary, result: MaskResult) {
  summary.rollouts++;
  summary.tokens += result.mask.length;
  for (const span of result.spans) if (span.role === 'action') summary.actionTokens += span.end - span.start;
  for (const item of result.diagnostics) summary.diagnostics.set(item.code, (summary.diagnostics.get(item.code) ?? 0) + 1);
}

/** What a run over rollouts does with each: writes its mask, or checks the mask it brings. */
export type Mode = 'mask' | 'check';
