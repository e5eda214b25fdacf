/**
 * tagmask: rebuild the action mask of an agent rollout from its flat token stream.
 *
 *   token ids ─(byte table)─▶ bytes ─scan─▶ state starts ─spans─▶ spans ─mask─▶ Uint8Array
 *
 * The stages are composed in masker.ts.
 */
export { loadGrammar, checkGrammarFile, bundledGrammarNames, GrammarError, formatIssue } from './grammar/load.ts';
export { compileGrammar, machineConfig } from './grammar/compile.ts';
export { loadTokenizer } from './tokenizer/load.ts';
export { buildByteTable, textOf } from './tokenizer/table.ts';
export { RolloutError } from './diagnostics.ts';
export type { Diagnostic, DiagnosticCode, Severity } from './diagnostics.ts';
export type { Span } from './spans.ts';
export type { OptionValues } from './scan/bind.ts';
export type { ByteTable } from './tokenizer/table.ts';
export type { CompiledGrammar } from './grammar/compile.ts';
export type { LoadedTokenizer, TransformersTokenizer, EncodeOptions, DecodeOptions, ChatMessage, ChatTemplateOptions, ChatRendering } from './tokenizer/load.ts';

export { Masker, createMasker, type MaskResult, type MaskOptions } from './masker.ts';
