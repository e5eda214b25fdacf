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
// Which parts of a literal are special tokens of a tokenizer (matched by id) and which are text (bytes).
export { cutLiteral, specialTokens, type LiteralPart } from './tokenizer/special.ts';
export { RolloutError } from './diagnostics.ts';
export type { Diagnostic, DiagnosticCode, Severity } from './diagnostics.ts';
export type { Span } from './scan/spans.ts';
export type { OptionValues } from './scan/bind.ts';
export type { ByteTable } from './tokenizer/table.ts';
export type { CompiledGrammar } from './grammar/compile.ts';
export type { LoadedTokenizer, TransformersTokenizer, EncodeOptions, DecodeOptions, ChatMessage, ChatTemplateOptions, ChatRendering } from './tokenizer/load.ts';

export { Masker, createMasker, type MaskResult, type MaskOptions } from './masker.ts';

// The proof: tinker's transition merge, its extension audit, and comparisons of masks.
export { trajectoryToData, auditExtension, type Trajectory, type Transition, type Action, type Datum, type MergeOptions, type ExtensionAudit, type ExtensionSplit, type ExtensionCost } from './merge.ts';
export { checkTrajectory, compareMasks, directionOf, frameOf, type Disagreement, type DisagreementClass, type Direction, type Frame, type TrajectoryVerdict, type DatumVerdict, type SplitReport } from './conformance.ts';
export { parseTrajectoryLine, datumJsonLine, datumRow } from './io/trajectory.ts';
// The one rollout reader: any input (JSONL, .jsonl.gz, Parquet) and shape (src/io/shapes.ts) every command reads.
export { readRollouts, type ReadRecord } from './io/records.ts';
export type { ShapeName, ShapedLine, ShapedRollout, TokenRollout, TextRollout, MessagesRollout, GivenMask } from './io/shapes.ts';

// Suites, and files of rollouts through a pool of maskers (one per option set).
export { MaskerPool } from './masker.ts';
export { findSuites, readSuite, proveSuite } from './suites.ts';
export { suitePassed, type Suite, type SuiteVerdict, type RolloutVerdict } from './conformance.ts';
export { runRollouts, runMerge, type RunOptions } from './run.ts';
export type { RunSummary } from './summary.ts';

// Diagnostics: the registry, and the words and JSON records made from it.
export { CODES, messageOf, severityOf, type Code, type DiagnosticArgs, type Family } from './diagnostics.ts';
export { formatDiagnostic, formatDisagreement, formatFinding, formatRunSummary, formatSuite, formatSplit } from './report/text.ts';
export { conformanceRecords, namedSides } from './report/json.ts';
export { showRollout } from './report/show.ts';
export { checkGrammar, type GrammarIssue, type GrammarIssueCode } from './grammar/check.ts';
export { lintLiterals, type LiteralFinding } from './grammar/lint.ts';
