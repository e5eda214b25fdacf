/**
 * Words for people: one line per diagnostic, grammar issue, lint finding, disagreement, split; the summary
 * of a run and the report of a suite. Pure functions of records (no I/O), so the CLI, the HTML report and
 * tests lay out the same records the same way. The words of each code come from src/diagnostics.ts.
 */
import { basename } from 'node:path';
import type { Diagnostic } from '../diagnostics.ts';
import type { LiteralFinding } from '../grammar/lint.ts';
import { partsInWords, type Disagreement, type SplitReport, type TrajectoryVerdict } from '../conformance.ts';
import type { ExtensionCost, ExtensionSplit } from '../merge.ts';
import type { RunSummary, Mode } from '../summary.ts';
import { suitePassed, type SuiteVerdict } from '../conformance.ts';
import { textOf, type ByteTable } from '../tokenizer/table.ts';
import { idText } from '../io/lines.ts';
import { PATTERN_WORDS, type Pattern, type PatternCode } from '../patterns.ts';

// Characters a terminal acts on instead of showing: C0 and C1 controls (ESC starts colours, titles, screen
// clears; CR and BS overwrite), DEL, line and paragraph separators, and the bidirectional overrides and
// isolates that reorder what is shown. Tab and newline stay in text, not in ids.
const CONTROLS_TEXT = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
const CONTROLS_ID = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
const escapeChar = (char: string) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`;

/** Text as a terminal shows it, every control character written out as `\uXXXX` (as JSON writes it). */
export function visibleText(text: string): string {
  return text.replace(CONTROLS_TEXT, escapeChar);
}

/** An id for a terminal line: idText, with newlines and tabs written out too. */
export function visibleId(id: unknown): string {
  return idText(id).replace(CONTROLS_ID, escapeChar);
}

/** `severity code at token N: message`. */
export function formatDiagnostic(item: Diagnostic): string {
  return `${item.severity} ${item.code} at token ${item.token}${item.offset ? ` byte ${item.offset}` : ''}: ${item.message}`;
}


/** A lint finding about a grammar file's literal. */
export function formatFinding(file: string, finding: LiteralFinding): string {
  return `${file}: ${finding.severity} ${finding.code} at ${finding.path}: ${finding.message}`;
}

export function formatGrammarTotals(file: string, errors: number, warnings: number): string {
  return `${file}: ${errors} error(s), ${warnings} warning(s)`;
}

/** Text shortened for a report line, JSON-quoted. */
export const clip = (text: string, length = 60) => JSON.stringify(text.length > length ? `${text.slice(0, length)}…` : text);

/**
 * One disagreement for people: class, token range, both sides by name, what it means for training, and
 * the decoded text around it. `side` names the mask under audit: `given` in check, `construction` or
 * `merge` in conformance; tagmask's side is always `protocol`.
 */
export function formatDisagreement(id: unknown, run: Disagreement, side = 'given'): string {
  return `${idText(id)}: ${run.class} tokens [${run.start}, ${run.end}) ${side} ${run.given}, protocol ${run.protocol}: ${side === 'given' ? 'the given mask' : `the ${side}'s mask`} ${disagreementWords(run)}${run.cause ? `; the cause: ${causeWords(run.cause)}` : ''}: …${clip(run.before, 30)} ⟦${clip(run.text, 60)}⟧ ${clip(run.after, 30)}…`;
}

/**
 * What a run does, named by its parts: "trains on environment text: the environment's reply (information)",
 * "trains the template's "\n" after "<|im_end|>", which the model did not sample", "leaves the end-of-turn
 * token "<|im_end|>" untrained". Environment text is said only of the environment's replies.
 */
export function disagreementWords(run: Disagreement): string {
  const parts = run.parts ?? [];
  if (!parts.length) return run.direction;
  const words = partsInWords(parts);
  if (run.given === 1) {
    if (parts.every((part) => part.code === 'environment-reply')) return `trains on environment text: ${words}`;
    // Past a departure tagmask cannot tell whose the text is: the model may well have sampled it.
    if (parts.every((part) => part.code === 'after-departure')) return `trains ${words}, which tagmask cannot place`;
    return `trains ${words}, which the model did not sample`;
  }
  // Leaving a cut turn untrained is a policy some trainers choose: said as one.
  if (parts.every((part) => part.code === 'truncated-turn')) return `leaves ${words} untrained, as TRL's mask_truncated_completions does (a policy, not a mask bug)`;
  return `leaves ${words} untrained`;
}

/** A departure from the template, said where the disagreement it explains is: "the stream departs from the template at token 35 (missing-reply: …)". */
export function causeWords(cause: { code: string; token: number; words: string }): string {
  return `the stream departs from the template at token ${cause.token} (${cause.code}): ${cause.words}`;
}

/** The line before a rollout's runs when its whole mask follows a known pattern. */
export function formatPattern(id: unknown, pattern: Pattern): string {
  return `${visibleId(id)}: the given mask follows a pattern (${pattern.code}): ${pattern.words}`;
}

/** A pattern's short name for the summary: "every stop token untrained". */
const patternTitle = (code: string) => (PATTERN_WORDS[code as PatternCode] ?? code).split(':')[0];

/** The option values under which a disagreeing rollout's masks agree: "with `--set template_think=0` these masks agree". */
export function formatHints(id: unknown, hints: Array<{ option: string; value: number | null }>): string {
  const flags = hints.map((hint) => `\`--set ${hint.option}=${hint.value}\``);
  return `${visibleId(id)}: with ${flags.length > 1 ? `${flags.slice(0, -1).join(', ')} or ${flags.at(-1)}` : flags[0]} these masks agree`;
}

/** Said when a mask one shorter than the tokens is read in target space, so nobody reads its indices off by one. */
export function formatFrame(id: unknown, maskLength: number, tokenCount: number): string {
  return `${visibleId(id)}: the mask has ${maskLength} values for ${tokenCount} tokens, read in target space (frame "targets": mask[i] is for token i + 1); token ranges below count tokens`;
}

/**
 * A merge split: where the observation stops extending the sequence, both sides (decoded with `table`), the
 * cost. `idJson` is the trajectory's id as JSON.
 */
export function formatSplit(idJson: string, split: ExtensionSplit, cost: ExtensionCost, datums: number, table?: ByteTable): string {
  const show = (ids: number[]) => (table ? JSON.stringify(textOf(table, ids.filter((token) => token < table.size))) : `[${ids.join(',')}]`);
  return `split: trajectory ${idJson} starts a new datum at transition ${split.transition}: at token ${split.position} the sequence so far has ${show(split.expected)}, the new observation ${show(split.actual)}; ${cost.trainedTokens} tokens trained as ${datums} datums instead of ${cost.mergedTokens} merged`;
}

/** A split a suite's trajectory made, decoded (SplitReport), with what it cost: for the suite report and the HTML page. */
export function formatSplitNote(trajectory: TrajectoryVerdict, split: SplitReport, width = 60): string {
  return `split at transition ${split.transition}, token ${split.position}: the sequence so far ${clip(split.expected, width)}, the new observation ${clip(split.actual, width)}; ${trajectory.cost.trainedTokens} tokens trained as ${trajectory.datums.length} datums vs ${trajectory.cost.mergedTokens} merged`;
}

/** One line after a `mask`/`check` run. */
export function formatRunSummary(summary: RunSummary, mode: Mode): string {
  const share = summary.tokens ? ((100 * summary.actionTokens) / summary.tokens).toFixed(1) : '0.0';
  const codes = [...summary.diagnostics].sort((a, b) => b[1] - a[1]).map(([code, count]) => `${code}×${count}`).join(', ');
  const parts = [`${summary.rollouts} rollouts masked (${summary.tokens} tokens, ${share}% action)`];
  if (mode === 'check') {
    parts.push(`${summary.rollouts - summary.disagreeing} agree, ${summary.disagreeing} disagree`);
    for (const [direction, runs] of summary.directions) parts.push(`${runs} run(s) where the given mask ${direction}`);
    for (const [code, count] of [...(summary.patterns ?? [])].sort((a, b) => b[1] - a[1])) parts.push(`${count} of ${summary.rollouts} rollouts: ${patternTitle(code)}`);
    // Which parts the disagreements are, over the file: "disagreeing parts: newline-after-stop in 142 rollouts, header in 3".
    const named = [...(summary.parts ?? [])].sort((a, b) => b[1] - a[1]).map(([code, count], k) => `${code} in ${count}${k ? '' : ` of ${summary.rollouts} rollouts`}`);
    if (named.length) parts.push(`disagreeing parts: ${named.join(', ')}`);
    // An option is named when it makes several rollouts agree (or every disagreeing one).
    for (const [flag, count] of [...(summary.hints ?? [])].sort((a, b) => b[1] - a[1]).slice(0, 3)) {
      if (count >= 2 || count === summary.disagreeing) parts.push(`${count} of ${summary.rollouts} rollouts agree with --set ${flag}`);
    }
    if (summary.targetFrame) parts.push(`${summary.targetFrame} mask(s) one shorter than their tokens, read in target space`);
  }
  if (summary.failed) parts.push(`${summary.failed} failed`);
  if (codes) parts.push(`diagnostics: ${codes}`);
  return parts.join('; ');
}

/** The human report of one suite: one line per check, details only where something disagrees. */
export function formatSuite(verdict: SuiteVerdict): string {
  const lines: string[] = [];
  const { suite } = verdict;
  lines.push(`${suitePassed(verdict) ? '✔' : '✖'} ${suite.name}  (grammar ${basename(suite.grammar)}, tokenizer ${suite.tokenizer})`);
  if (verdict.rollouts.length) {
    const agreeing = verdict.rollouts.filter((item) => item.disagreements.length === 0).length;
    const tokens = verdict.rollouts.reduce((sum, item) => sum + item.tokens, 0);
    const wrong = verdict.rollouts.reduce((sum, item) => sum + item.disagreements.reduce((s, run) => s + run.end - run.start, 0), 0);
    lines.push(`  rollouts      ${agreeing}/${verdict.rollouts.length} equal the mask built by construction (${tokens - wrong}/${tokens} tokens)`);
    for (const item of verdict.rollouts) for (const run of item.disagreements) lines.push(`    ✖ ${formatDisagreement(item.id, run, 'construction')}`);
  }
  if (verdict.retokenized.length) {
    const straddles = verdict.retokenized.reduce((sum, item) => sum + item.straddles, 0);
    lines.push(`  retokenized   ${verdict.retokenized.length} rollouts re-encoded in one piece: ${straddles} straddling tokens reported, no crash`);
  }
  if (verdict.trajectories.length) {
    const agreeing = verdict.trajectories.reduce((sum, item) => sum + item.agreeing, 0);
    const total = verdict.trajectories.reduce((sum, item) => sum + item.total, 0);
    const datums = verdict.trajectories.reduce((sum, item) => sum + item.datums.length, 0);
    const agreeingDatums = verdict.trajectories.reduce((sum, item) => sum + item.datums.filter((datum) => datum.agree).length, 0);
    lines.push(`  merge         ${agreeingDatums}/${datums} datums of ${verdict.trajectories.length} trajectories agree with the transition merge (${agreeing}/${total} target tokens)`);
    for (const trajectory of verdict.trajectories) {
      for (const split of trajectory.splits) {
        lines.push(`    ↳ ${visibleId(trajectory.id)}: ${formatSplitNote(trajectory, split, 40)}`);
      }
      for (const datum of trajectory.datums) for (const run of datum.disagreements) {
        lines.push(`    ✖ ${formatDisagreement(`${idText(trajectory.id)} datum ${datum.datum}`, run, 'merge')}`);
      }
    }
  }
  for (const error of verdict.errors) lines.push(`    ✖ ${error}`);
  return lines.join('\n');
}
