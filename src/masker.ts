/**
 * A grammar bound to a tokenizer and option values, ready to mask rollouts.
 *
 *   token ids ─(byte table)─▶ bytes ─scan─▶ state starts ─spans─▶ spans ─mask─▶ Uint8Array
 */
import { loadGrammar } from './grammar/load.ts';
import { needsAttributes, prepareAttributeReader } from './scan/attributes.ts';
import type { CompiledGrammar } from './grammar/compile.ts';
import { bind, type Bound, type OptionValues } from './scan/bind.ts';
import { Cursor } from './scan/cursor.ts';
import type { Segments } from './scan/segments.ts';
import { scanRollout } from './scan/runner.ts';
import { toDiagnostic } from './scan/describe.ts';
import { buildSpans, fillMask, segmentStarts, type Span } from './scan/spans.ts';
import { messageOf, RolloutError, severityOf, type Diagnostic } from './diagnostics.ts';
import { loadTokenizer, type LoadedTokenizer } from './tokenizer/load.ts';
import type { ByteTable } from './tokenizer/table.ts';
import type { ScanView } from './tokenizer/special.ts';

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
const byToken = (a: Diagnostic, b: Diagnostic) => a.token - b.token;

export class Masker {
  readonly bound: Bound;
  /** This masker's own scan state: two maskers never share one, so scans do not interfere. */
  private readonly cursor = new Cursor();
  /** What `maskBatch` hands its `each` callback: reused, valid during the call. */
  private readonly scanned: Scanned = new Scanned(this, this.cursor.out);

  /** Binding is cheap after the first Masker of a grammar × tokenizer pair: the vocabulary tables are shared. */
  constructor(grammar: CompiledGrammar, table: ByteTable, options: OptionValues = {}, view?: ScanView) {
    this.bound = bind(grammar, table, options, view);
  }

  /** Mask one rollout, with its spans and diagnostics. Throws RolloutError for input it cannot mask. */
  mask(tokens: ArrayLike<number>, options: MaskOptions = {}): MaskResult {
    const { bound, cursor } = this;
    const segments = cursor.out;
    scanRollout(bound, tokens, options.promptLength ?? -1, cursor);
    const starts = segmentStarts(bound, segments);
    const mask = new Uint8Array(tokens.length);
    const anyAction = fillMask(bound, segments, starts, tokens.length, mask);
    return this.resultOfScan(tokens, mask, anyAction);
  }

  /** The result of the rollout this masker scanned last (its mask filled): spans and diagnostics, as `mask()` gives them. */
  resultOfScan(tokens: ArrayLike<number>, mask: Uint8Array, anyAction: boolean): MaskResult {
    const { bound } = this;
    const segments = this.cursor.out;
    const spans = buildSpans(bound, tokens, segments, segments.starts);
    const diagnostics: Diagnostic[] = [];
    for (const record of segments.records) diagnostics.push(toDiagnostic(bound, tokens, record));
    if (tokens.length > 0 && !anyAction) {
      diagnostics.push({ code: 'no-action', severity: severityOf('no-action'), token: 0, message: messageOf('no-action', { token: 0 }) });
    }
    if (diagnostics.length > 1) diagnostics.sort(byToken);
    return { mask, spans, diagnostics };
  }

  /**
   * The hot path: mask many rollouts stored back to back (`ids[starts[r] .. starts[r + 1]]`) into one
   * mask array, without spans or messages. Returns how many diagnostics were raised (those `mask()` would
   * give, `no-action` included). A rollout that cannot be masked throws a RolloutError naming the rollout
   * and the token index within it; arguments that do not fit together throw a RangeError before any work.
   * `each`, when given, sees every rollout right after it is masked (the CLI writes its output line from it).
   */
  maskBatch(ids: Uint32Array, starts: Uint32Array, promptLengths: Int32Array | undefined, mask: Uint8Array, each?: (rollout: number, scanned: Scanned) => void): number {
    const rollouts = Math.max(0, starts.length - 1);
    if (rollouts > 0) {
      const end = starts[starts.length - 1];
      if (end > ids.length) throw new RangeError(`maskBatch: starts ends at ${end}, past the ${ids.length} ids`);
      if (mask.length < end) throw new RangeError(`maskBatch: mask holds ${mask.length} values, the rollouts ${end} tokens`);
      for (let r = 0; r < rollouts; r++) {
        if (starts[r] > starts[r + 1]) throw new RangeError(`maskBatch: starts[${r}] = ${starts[r]} is past starts[${r + 1}] = ${starts[r + 1]}`);
      }
      if (promptLengths && promptLengths.length < rollouts) throw new RangeError(`maskBatch: ${promptLengths.length} prompt lengths for ${rollouts} rollouts`);
    }
    const { bound, cursor } = this;
    const segments = cursor.out;
    let raised = 0;
    let r = 0;
    try {
      for (; r < rollouts; r++) {
        const from = starts[r];
        const rollout = ids.subarray(from, starts[r + 1]);
        scanRollout(bound, rollout, promptLengths ? promptLengths[r] : -1, cursor);
        const anyAction = fillMask(bound, segments, segmentStarts(bound, segments), rollout.length, mask, from);
        raised += segments.records.length + (anyAction || rollout.length === 0 ? 0 : 1);
        if (each) {
          const scanned = this.scanned;
          scanned.tokens = rollout; scanned.from = from; scanned.mask = mask; scanned.anyAction = anyAction;
          each(r, scanned);
        }
      }
    } catch (error) {
      if (error instanceof RolloutError) throw new RolloutError(`rollout ${r}: ${error.message}`, error.token);
      throw error;
    }
    return raised;
  }
}

/**
 * One rollout of a `maskBatch` call, just masked: its tokens, where its mask starts in the batch's mask, and
 * the scan's segments (state starts, their token starts, the diagnostics' records). Valid only during the
 * `each` call that gets it; `result()` gives what `mask()` would have returned for it.
 */
export class Scanned {
  tokens: Uint32Array = new Uint32Array(0);
  from = 0;
  mask: Uint8Array = new Uint8Array(0);
  anyAction = false;
  constructor(readonly masker: Masker, readonly segments: Segments) {}
  /** Spans and diagnostics as `mask()` gives them, with the mask copied out of the batch's. */
  result(): MaskResult {
    return this.masker.resultOfScan(this.tokens, this.mask.slice(this.from, this.from + this.tokens.length), this.anyAction);
  }
}

/** Load a grammar (bundled name or path) and a tokenizer (file, folder or package) and bind them. */
export async function createMasker(grammar: string, tokenizer: string | LoadedTokenizer, options: OptionValues = {}): Promise<Masker> {
  const loaded = typeof tokenizer === 'string' ? await loadTokenizer(tokenizer) : tokenizer;
  const compiled = loadGrammar(grammar);
  if (needsAttributes(compiled.grammar.tags)) await prepareAttributeReader();
  return new Masker(compiled, loaded.table, options);
}

function hasNoKeys(value: object): boolean {
  for (const _ in value) return false;
  return true;
}

/**
 * One Masker per distinct option set (rollouts may bring their own options). Binding a new set costs only
 * its small option arrays (the vocabulary tables are shared), so the pool keeps the most recently used
 * MAX_OPTION_SETS and drops the oldest: a file where every line has its own budget stays bounded in memory.
 */
export class MaskerPool {
  static readonly MAX_OPTION_SETS = 64;
  private readonly maskers = new Map<string, Masker>();
  constructor(readonly grammar: CompiledGrammar, readonly tokenizer: LoadedTokenizer, readonly options: OptionValues) {}

  /** The Masker for the pool's own options, kept apart: most lines bring no options, and need no key. */
  private base: Masker | undefined;

  get(lineOptions: OptionValues): Masker {
    if (hasNoKeys(lineOptions)) return (this.base ??= new Masker(this.grammar, this.tokenizer.table, { ...this.options }));
    const options = { ...this.options, ...lineOptions };
    const key = JSON.stringify(Object.entries(options).sort());
    let masker = this.maskers.get(key);
    if (masker) {
      // Most recently used last: Map keeps insertion order.
      this.maskers.delete(key);
    } else {
      masker = new Masker(this.grammar, this.tokenizer.table, options);
      if (this.maskers.size >= MaskerPool.MAX_OPTION_SETS) this.maskers.delete(this.maskers.keys().next().value!);
    }
    this.maskers.set(key, masker);
    return masker;
  }

  /** The grammar and tokenizer as `open` was given them: a worker thread opens the same pool from these. */
  source?: { grammar: string; tokenizer: string };

  /** `tokenizer`: a name, folder or file to load, or one already loaded (a `--jobs` worker's, from the main thread's table). */
  static async open(grammar: string, tokenizer: string | LoadedTokenizer, options: OptionValues): Promise<MaskerPool> {
    const compiled = loadGrammar(grammar);
    if (needsAttributes(compiled.grammar.tags)) await prepareAttributeReader();
    const loaded = typeof tokenizer === 'string' ? await loadTokenizer(tokenizer) : tokenizer;
    const pool = new MaskerPool(compiled, loaded, options);
    pool.source = { grammar, tokenizer: loaded.path };
    pool.get({}); // bad --set values fail here, before any line is read
    return pool;
  }
}
