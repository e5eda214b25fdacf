/**
 * Records as JSON lines, for programs: conformance verdicts, one line per rollout, re-tokenized rollout,
 * datum, split and error. The HTML report and `--json` read the same records.
 */
import type { Disagreement } from '../conformance.ts';
import type { SuiteVerdict } from '../conformance.ts';

/** A disagreement as JSON with the audited side under its own name (`construction`, `merge`) instead of `given`. */
export function namedSides(run: Disagreement, side: string): object {
  if (side === 'given') return run;
  const { class: kind, start, end, given, protocol, direction, before, text, after } = run;
  return { class: kind, start, end, [side]: given, protocol, direction, before, text, after };
}

/** `tagmask conformance --json`: one record per rollout, re-tokenized rollout, datum, split and error. */
export function conformanceRecords(verdict: SuiteVerdict): object[] {
  const suite = verdict.suite.name;
  const records: object[] = [];
  for (const item of verdict.rollouts) {
    records.push({ suite, kind: 'rollout', id: item.id, tokens: item.tokens, agree: item.disagreements.length === 0, disagreements: item.disagreements.map((run) => namedSides(run, 'construction')) });
  }
  // Re-tokenized twins have no mask to agree with: what they prove is that they mask, and their straddles.
  for (const item of verdict.retokenized) records.push({ suite, kind: 'retokenized', id: item.id, tokens: item.tokens, straddles: item.straddles });
  for (const trajectory of verdict.trajectories) {
    for (const datum of trajectory.datums) {
      records.push({ suite, kind: 'datum', id: trajectory.id, datum: datum.datum, transitions: datum.transitions, tokens: datum.tokens, agree: datum.agree, disagreements: datum.disagreements.map((run) => namedSides(run, 'merge')) });
    }
    for (const split of trajectory.splits) records.push({ suite, kind: 'split', id: trajectory.id, ...split, cost: trajectory.cost });
  }
  for (const error of verdict.errors) records.push({ suite, kind: 'error', error });
  return records;
}
