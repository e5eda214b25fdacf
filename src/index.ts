/**
 * tagmask: rebuild the action mask of an agent rollout from its flat token stream.
 *
 *   token ids ─(byte table)─▶ bytes ─scan─▶ state starts ─spans─▶ spans ─mask─▶ Uint8Array
 *
 * The stages are composed here and only here.
 */
import { loadGrammar } from './grammar/load.ts';
import { needsAttributes, prepareAttributeReader } from './attributes.ts';
import type { CompiledGrammar } from './grammar/compile.ts';
import { bind, scanRollout, Segments, type Bound, type OptionValues } from './scan.ts';
import { buildSpans, fillMask, type Span } from './spans.ts';
import { RolloutError, SEVERITY, type Diagnostic } from './diagnostics.ts';
import { loadTokenizer, type LoadedTokenizer } from './tokenizer/load.ts';
import type { ByteTable } from './tokenizer/table.ts';

export { loadGrammar, checkGrammarFile, bundledGrammarNames, GrammarError, formatIssue } from './grammar/load.ts';
export { compileGrammar, machineConfig } from './grammar/compile.ts';
export { loadTokenizer } from './tokenizer/load.ts';
export { buildByteTable, textOf } from './tokenizer/table.ts';
export { RolloutError } from './diagnostics.ts';
export type { Diagnostic, DiagnosticCode, Severity } from './diagnostics.ts';
export type { Span } from './spans.ts';
export type { OptionValues } from './scan.ts';
export type { ByteTable } from './tokenizer/table.ts';
export type { CompiledGrammar } from './grammar/compile.ts';
export type { LoadedTokenizer, TransformersTokenizer, EncodeOptions, DecodeOptions, ChatMessage, ChatTemplateOptions, ChatRendering } from './tokenizer/load.ts';

export interface MaskResult {
  /** 1 = the model sampled this token (train on it), 0 = prompt, environment, padding. */
  mask: Uint8Array;
  spans: Span[];
  diagnostics: Diagnostic[];
}

export interface MaskOptions {
  /** Tokens before this index are prompt; without it the grammar's prompt end is searched for. */
  promptLength?: number;
}

// Module-level, so a call to mask() creates no function objects.
const isAction = (span: Span) => span.role === 'action';
const byToken = (a: Diagnostic, b: Diagnostic) => a.token - b.token;

export class Masker {
  readonly bound: Bound;
  private readonly segments = new Segments();

  constructor(grammar: CompiledGrammar, table: ByteTable, options: OptionValues = {}) {
    this.bound = bind(grammar, table, options);
  }

  /** Mask one rollout, with its spans and diagnostics. Throws RolloutError for input it cannot mask. */
  mask(tokens: ArrayLike<number>, options: MaskOptions = {}): MaskResult {
    const segments = this.segments;
    segments.messages = true;
    scanRollout(this.bound, tokens, options.promptLength ?? -1, segments);
    const mask = new Uint8Array(tokens.length);
    fillMask(this.bound, tokens, segments, mask);
    const spans = buildSpans(this.bound, tokens, segments);
    // The segments are reused by the next rollout: the caller gets its own array.
    const diagnostics = segments.diagnostics.slice();
    if (tokens.length > 0 && !spans.some(isAction)) {
      diagnostics.push({ code: 'no-action', severity: SEVERITY['no-action'], token: 0, message: 'no token is action: training on this rollout would change nothing' });
    }
    if (diagnostics.length > 1) diagnostics.sort(byToken);
    return { mask, spans, diagnostics };
  }

  /**
   * The hot path: mask many rollouts stored back to back (`ids[starts[r] .. starts[r + 1]]`) into one
   * mask array, without spans or messages. Returns how many diagnostics were raised. A rollout that
   * cannot be masked throws a RolloutError naming the rollout and the token index within it.
   */
  maskBatch(ids: Uint32Array, starts: Uint32Array, promptLengths: Int32Array | undefined, mask: Uint8Array): number {
    const segments = this.segments;
    segments.messages = false;
    let raised = 0;
    let r = 0;
    try {
      for (; r + 1 < starts.length; r++) {
        const rollout = ids.subarray(starts[r], starts[r + 1]);
        scanRollout(this.bound, rollout, promptLengths ? promptLengths[r] : -1, segments);
        fillMask(this.bound, rollout, segments, mask, starts[r]);
        raised += segments.diagnostics.length;
      }
    } catch (error) {
      if (error instanceof RolloutError) throw new RolloutError(`rollout ${r}: ${error.message}`, error.token);
      throw error;
    } finally {
      segments.messages = true;
    }
    return raised;
  }
}

/** Load a grammar (bundled name or path) and a tokenizer (file, folder or package) and bind them. */
export async function createMasker(grammar: string, tokenizer: string | LoadedTokenizer, options: OptionValues = {}): Promise<Masker> {
  const loaded = typeof tokenizer === 'string' ? await loadTokenizer(tokenizer) : tokenizer;
  const compiled = loadGrammar(grammar);
  if (needsAttributes(compiled.grammar.tags)) await prepareAttributeReader();
  return new Masker(compiled, loaded.table, options);
}
