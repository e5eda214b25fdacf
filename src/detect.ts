/**
 * Which bundled grammar do these rollouts speak? Evidence first: every grammar's literals (prompt end,
 * headers, tags, handovers, reply envelopes) are counted in the streams' bytes, and each grammar masks every
 * rollout. A grammar **fits** when it masks at least 75% of the rollouts cleanly (prompt end found or
 * `prompt_length` given, no error, no sign that the protocol is another one: `missing-reply`, `text-after-end`, `observation-tag-in-action`)
 * and at least one of its model- or environment-side literals occurs after the prompt. Among the grammars
 * that fit, one whose found literals are a strict subset of another's says less about the streams and gives
 * way (a Qwen3 tool-calling stream also fits `thinking`, but `qwen3-tools` explains its <tool_call> too).
 * Where two still fit, the verdict says so rather than guess.
 */
import { bundledGrammarNames, loadGrammar } from './grammar/load.ts';
import type { CompiledGrammar } from './grammar/compile.ts';
import type { Grammar } from './grammar/schema.ts';
import { Masker } from './masker.ts';
import { KNOWN, type ByteTable } from './tokenizer/table.ts';

export interface DetectRollout { tokens: ArrayLike<number>; promptLength?: number }

export interface LiteralEvidence {
  literal: string;
  /** Where the grammar declares it (`handovers[0].after`, `tags.think.open`…). */
  paths: string[];
  /** Occurrences in all rollouts, and in how many rollouts. */
  count: number;
  rollouts: number;
}

export type Fit = 'fits' | 'partial' | 'no';

export interface CandidateVerdict {
  grammar: string;
  fit: Fit;
  /** Why, in a few words. */
  reason: string;
  rollouts: number;
  /** Rollouts whose prompt end was found, or that brought `prompt_length`. */
  promptFound: number;
  /** Rollouts with at least one action token. */
  withAction: number;
  /** Rollouts that could not be masked or got an error diagnostic. */
  withErrors: number;
  /** Rollouts with a diagnostic that says the protocol does not match (missing-reply, text-after-end, observation-tag-in-action). */
  misfits: number;
  /** Rollouts with the prompt end, no error and no such sign. */
  clean: number;
  found: LiteralEvidence[];
  /** Declared literals that never occur. */
  missing: string[];
}

export interface Detection {
  /** The one grammar that fits, if exactly one does (after the more specific one wins). */
  verdict?: string;
  /** Every grammar that fits, most specific first. */
  fitting: string[];
  /** Fitting grammars that gave way to a more specific one (their literals are a subset of its). */
  outranked: Array<{ grammar: string; by: string }>;
  candidates: CandidateVerdict[];
  rollouts: number;
  /** Token ids outside the tokenizer's vocabulary: the tokenizer is probably not the one the rollouts used. */
  unknownIds: number;
}

const MISFIT_CODES = new Set(['missing-reply', 'text-after-end', 'observation-tag-in-action']);
/**
 * A grammar fits when at least this share of the rollouts mask cleanly: a file of real rollouts has a few
 * broken ones (a model writing after its answer, a reply cut without a budget), which say little about the
 * protocol; a wrong grammar fails on most.
 */
export const FIT_SHARE = 0.75;

/** The literals a grammar declares, by text, with where it declares them. Template-inserted optional text and padding are left out: they are not the protocol's markers. */
export function grammarLiterals(grammar: Grammar): Map<string, string[]> {
  const literals = new Map<string, string[]>();
  const add = (literal: string | undefined, path: string) => {
    if (!literal) return;
    const paths = literals.get(literal) ?? [];
    paths.push(path);
    literals.set(literal, paths);
  };
  grammar.prompt.ends_after.forEach((literal, i) => add(literal, `prompt.ends_after[${i}]`));
  grammar.headers.forEach((literal, i) => add(literal, `headers[${i}]`));
  for (const [name, tag] of Object.entries(grammar.tags)) {
    tag.open.forEach((literal, i) => add(literal, `tags.${name}.open${tag.open.length > 1 ? `[${i}]` : ''}`));
    tag.close.forEach((literal, i) => add(literal, `tags.${name}.close${tag.close.length > 1 ? `[${i}]` : ''}`));
  }
  grammar.handovers.forEach((handover, i) => {
    add(handover.after, `handovers[${i}].after`);
    handover.model_continues.forEach((literal, j) => add(literal, `handovers[${i}].model_continues[${j}]`));
  });
  for (const [name, reply] of Object.entries(grammar.replies)) {
    add(reply.open, `replies.${name}.open`);
    add(reply.close, `replies.${name}.close`);
    add(reply.ends_before, `replies.${name}.ends_before`);
    add(reply.text, `replies.${name}.text`);
  }
  return literals;
}

/** A rollout's bytes, from the tokenizer's byte table (ids outside it are counted and skipped), with where each token starts. */
interface Stream { bytes: Buffer; starts: Int32Array; unknown: number }

function streamOf(table: ByteTable, tokens: ArrayLike<number>): Stream {
  const starts = new Int32Array(tokens.length + 1);
  let unknown = 0;
  for (let i = 0; i < tokens.length; i++) {
    const id = tokens[i];
    const known = id < table.size && (table.flags[id] & KNOWN);
    if (!known) unknown++;
    starts[i + 1] = starts[i] + (known ? table.offsets[id + 1] - table.offsets[id] : 0);
  }
  const bytes = Buffer.allocUnsafe(starts[tokens.length]);
  for (let i = 0; i < tokens.length; i++) {
    const id = tokens[i];
    if (starts[i + 1] > starts[i]) bytes.set(table.pieces.subarray(table.offsets[id], table.offsets[id + 1]), starts[i]);
  }
  return { bytes, starts, unknown };
}

function occurrences(haystack: Buffer, needle: Buffer): number {
  let count = 0;
  for (let at = haystack.indexOf(needle); at >= 0; at = haystack.indexOf(needle, at + needle.length)) count++;
  return count;
}

function judge(name: string, grammar: CompiledGrammar, table: ByteTable, rollouts: DetectRollout[], streams: Stream[]): CandidateVerdict {
  const spec = grammar.grammar;
  const masker = new Masker(grammar, table);
  let promptFound = 0;
  let withAction = 0;
  let withErrors = 0;
  let misfits = 0;
  let clean = 0;
  // Markers count only after this grammar's prompt end: a prompt quotes the tags it asks for (Search-R1's does).
  const afterPrompt: Buffer[] = [];
  rollouts.forEach((rollout, r) => {
    let from = rollout.tokens.length;
    try {
      const result = masker.mask(rollout.tokens, { promptLength: rollout.promptLength });
      const prompt = !result.diagnostics.some((item) => item.code === 'no-prompt-end');
      const error = result.diagnostics.some((item) => item.severity === 'error');
      const misfit = result.diagnostics.some((item) => MISFIT_CODES.has(item.code));
      if (prompt) promptFound++;
      if (result.mask.some((value) => value === 1)) withAction++;
      if (error) withErrors++;
      if (misfit) misfits++;
      if (prompt && !error && !misfit) clean++;
      from = result.spans.find((span) => span.tag !== 'prompt')?.start ?? rollout.tokens.length;
    } catch {
      withErrors++;
    }
    afterPrompt.push(streams[r].bytes.subarray(streams[r].starts[from]));
  });

  const literals = grammarLiterals(spec);
  const found: LiteralEvidence[] = [];
  const missing: string[] = [];
  for (const [literal, paths] of literals) {
    // Whitespace (ReAct's line end) occurs everywhere: no evidence of anything.
    if (!literal.trim()) continue;
    const isPromptEnd = paths.some((path) => path.startsWith('prompt.'));
    const needle = Buffer.from(literal, 'utf8');
    let count = 0;
    let inRollouts = 0;
    streams.forEach((stream, r) => {
      // The prompt's end is the last bytes of the prompt: look for it in the whole stream.
      const here = occurrences(isPromptEnd ? stream.bytes : afterPrompt[r], needle);
      count += here;
      if (here) inRollouts++;
    });
    if (count) found.push({ literal, paths, count, rollouts: inRollouts });
    else missing.push(literal);
  }
  found.sort((a, b) => b.rollouts - a.rollouts || b.count - a.count);

  const promptLiterals = new Set(spec.prompt.ends_after);
  const protocolFound = found.filter((item) => !item.paths.every((path) => path.startsWith('prompt.') || path.startsWith('headers'))).length;
  const n = rollouts.length;
  let fit: Fit;
  let reason: string;
  if (n === 0) { fit = 'no'; reason = 'no rollouts'; }
  else if (promptFound === 0) {
    fit = 'no';
    reason = promptLiterals.size ? 'its prompt end is in no rollout' : 'it declares no prompt end and the rollouts bring no prompt_length';
  } else if (protocolFound === 0) { fit = 'no'; reason = 'none of its markers beyond the prompt end occur'; }
  else if (clean < FIT_SHARE * n) {
    fit = clean ? 'partial' : 'no';
    reason = [
      promptFound < n ? `prompt end in ${promptFound}/${n} rollouts` : '',
      withErrors ? `${withErrors} rollout(s) with errors` : '',
      misfits ? `${misfits} rollout(s) where the protocol does not match (missing-reply, text-after-end, observation-tag-in-action)` : '',
    ].filter(Boolean).join('; ');
  } else {
    fit = 'fits';
    const flaws = n - clean;
    reason = `${clean}/${n} rollouts masked cleanly${flaws ? ` (${flaws} with a prompt end missing, an error or a sign of another protocol)` : ''}, ${protocolFound} of its markers found`;
  }
  return { grammar: name, fit, reason, rollouts: n, promptFound, withAction, withErrors, misfits, clean, found, missing };
}

/** Judge every candidate grammar (default: the bundled ones) on these rollouts. */
export function detectGrammar(rollouts: DetectRollout[], table: ByteTable, candidates?: Array<{ name: string; grammar: CompiledGrammar }>): Detection {
  const list = candidates ?? bundledGrammarNames().map((name) => ({ name, grammar: loadGrammar(name) }));
  const streams = rollouts.map((rollout) => streamOf(table, rollout.tokens));
  const unknownIds = streams.reduce((n, stream) => n + stream.unknown, 0);
  const verdicts = list.map(({ name, grammar }) => judge(name, grammar, table, rollouts, streams));
  const rank: Record<Fit, number> = { fits: 0, partial: 1, no: 2 };
  verdicts.sort((a, b) => rank[a.fit] - rank[b.fit] || b.found.length - a.found.length || a.grammar.localeCompare(b.grammar));

  const fitting = verdicts.filter((verdict) => verdict.fit === 'fits');
  const foundSet = (verdict: CandidateVerdict) => new Set(verdict.found.map((item) => item.literal));
  const outranked: Array<{ grammar: string; by: string }> = [];
  for (const verdict of fitting) {
    const mine = foundSet(verdict);
    // A grammar gives way to one that finds all its markers and more, or the same markers while declaring fewer
    // that never occur (it claims less of the stream than it cannot show: Qwen3's JSON tool calls fit qwen3_5 too,
    // whose <function=…> blocks are nowhere).
    const wider = fitting.find((other) => other !== verdict && [...mine].every((literal) => foundSet(other).has(literal))
      && (other.found.length > mine.size || (other.found.length === mine.size && other.missing.length < verdict.missing.length)));
    if (wider) outranked.push({ grammar: verdict.grammar, by: wider.grammar });
  }
  const standing = fitting.filter((verdict) => !outranked.some((item) => item.grammar === verdict.grammar));
  return {
    verdict: standing.length === 1 ? standing[0].grammar : undefined,
    fitting: fitting.map((verdict) => verdict.grammar),
    outranked,
    candidates: verdicts,
    rollouts: rollouts.length,
    unknownIds,
  };
}

/** One sentence for stderr: the verdict, or why there is none. */
export function detectionSentence(detection: Detection): string {
  if (detection.verdict) {
    const others = detection.outranked.filter((item) => item.by === detection.verdict).map((item) => item.grammar);
    const verdict = detection.candidates.find((item) => item.grammar === detection.verdict)!;
    const clean = verdict.clean === verdict.rollouts ? `all ${verdict.rollouts} rollouts` : `the ${verdict.rollouts} rollouts (${verdict.clean} masked cleanly)`;
    return `grammar ${detection.verdict} fits ${clean}${others.length ? `; so do ${others.join(', ')}, whose markers found are a subset of its` : ''}`;
  }
  const standing = detection.fitting.filter((name) => !detection.outranked.some((item) => item.grammar === name));
  if (standing.length > 1) return `ambiguous: ${standing.join(' and ')} all fit the ${detection.rollouts} rollouts with different markers; name one with --grammar`;
  const partial = detection.candidates.filter((verdict) => verdict.fit === 'partial').map((verdict) => verdict.grammar);
  const tokenizer = detection.unknownIds ? ` (${detection.unknownIds} token ids are outside the tokenizer: is it the rollouts' tokenizer?)` : '';
  return `no bundled grammar fits the ${detection.rollouts} rollouts${partial.length ? `; partly: ${partial.join(', ')}` : ''}${tokenizer}`;
}

/** The evidence for people: one block per candidate, then the verdict. */
export function formatDetection(detection: Detection, maxLiterals = 8): string {
  const width = Math.max(...detection.candidates.map((verdict) => verdict.grammar.length));
  const lines: string[] = [];
  for (const verdict of detection.candidates) {
    lines.push(`${verdict.grammar.padEnd(width)}  ${verdict.fit.padEnd(7)}  ${verdict.reason}`);
    if (verdict.found.length) {
      const shown = verdict.found.slice(0, maxLiterals).map((item) => `${JSON.stringify(item.literal)} ×${item.count} in ${item.rollouts}/${verdict.rollouts}`);
      const more = verdict.found.length > maxLiterals ? `, and ${verdict.found.length - maxLiterals} more` : '';
      lines.push(`${''.padEnd(width)}  found: ${shown.join(', ')}${more}`);
    }
  }
  lines.push(`verdict: ${detectionSentence(detection)}`);
  return lines.join('\n');
}
