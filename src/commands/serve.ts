/**
 * `tagmask serve`: one long-lived process speaking a line protocol on stdin/stdout, for trainers that mask a
 * batch per step (the Python package in python/ is its client). Protocol version 1, one JSON object per line
 * each way; every response carries the request's `id` and is written out as soon as it is done:
 *
 *   {"id", "op": "version"}                         → {"id", "ok": true, "protocol": 1, "tagmask": "0.1.0", "ops": […]}
 *   {"id", "op": "ping"}                            → {"id", "ok": true}
 *   {"id", "op": "open", "grammar", "tokenizer", "options"?, "format"?}
 *                                                   → {"id", "ok": true, "handle": 1, "grammar": NAME, "tokenizer": PATH}
 *   {"id", "op": "mask"|"check"|"show", "handle", "rollouts": [ROLLOUT…], "format"?, "mask_format"?,
 *    "observation_weight"?, "spans"?}               → {"id", "ok": true, "results": [RESULT…], "failed": N}
 *   {"id", "op": "close", "handle"}                 → {"id", "ok": true}
 *   anything wrong with the request itself          → {"id", "ok": false, "error": {"code", "message", "line"}}
 *
 * A ROLLOUT is what one input line of `mask` holds, in any shape it reads (flat ids, verl, TRL, SkyRL, …, text,
 * chat messages). Each RESULT names `index`, the rollout of the request it came from (a SkyRL batch line gives
 * several), and is what `mask`, `check` or `show` writes for it: `{"index", "id", "mask", "spans",
 * "diagnostics"}`, a verdict, or `{"index", "id", "text"}`; a rollout that cannot be masked is `{"index",
 * "id", "error"}` and the others go on. Memory stays bounded: grammar × tokenizer tables are shared by every
 * handle that names them (a MaskerPool each, at most 64 option sets), at most MAX_HANDLES handles are open,
 * and nothing is kept between requests. End of input ends the process (exit 0), SIGTERM too, between requests.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CommandSpec } from './args.ts';
import { JsonlWriter } from '../io/jsonl.ts';
import { errorMessage, idJson, writable } from '../io/lines.ts';
import { maskPrepared, prepareRollout, type MaskContext } from '../io/prepare.ts';
import { auditPattern, auditPrepared, optionHints } from '../io/audit.ts';
import { actionRuns, spansWithChars, tokenCharOffsets, weighted } from '../io/mask-forms.ts';
import { isShapeName, readOptions, readShaped, type ShapeName } from '../io/shapes.ts';
import { isObject } from '../io/json.ts';
import { MaskerPool } from '../masker.ts';
import { showRollout } from '../report/show.ts';
import { loadGrammar, resolveGrammarPath } from '../grammar/load.ts';
import { needsAttributes, prepareAttributeReader } from '../scan/attributes.ts';
import { loadTokenizer, resolveTokenizerPath } from '../tokenizer/load.ts';
import type { OptionValues } from '../scan/bind.ts';
import { PACKAGE_ROOT } from '../paths.ts';

export const PROTOCOL = 1;
export const OPS = ['version', 'ping', 'open', 'mask', 'check', 'show', 'close'] as const;
/** Open handles allowed at once: each holds little, but a client that never closes must not grow without end. */
export const MAX_HANDLES = 1024;

/** A request that cannot be served: answered with `{"ok": false, "error": {code, message}}`. */
export class RequestError extends Error {
  constructor(readonly code: string, message: string) { super(message); }
}

interface Handle {
  pool: SharedPool;
  options: OptionValues;
  format?: ShapeName;
}

interface SharedPool { key: string; pool: MaskerPool; handles: number }

const tagmaskVersion = () => (JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string }).version;

function field<T>(request: Record<string, unknown>, name: string, type: 'string' | 'number' | 'object' | 'array', required: boolean): T | undefined {
  const value = request[name];
  if (value === undefined || value === null) {
    if (required) throw new RequestError('bad-request', `"${name}" is required`);
    return undefined;
  }
  const ok = type === 'array' ? Array.isArray(value) : type === 'object' ? isObject(value) : typeof value === type;
  if (!ok) throw new RequestError('bad-request', `"${name}" must be ${type === 'array' ? 'an array' : type === 'object' ? 'an object' : `a ${type}`}, got ${JSON.stringify(value)?.slice(0, 60)}`);
  return value as T;
}

function formatOf(request: Record<string, unknown>): ShapeName | undefined {
  const format = field<string>(request, 'format', 'string', false);
  if (format !== undefined && !isShapeName(format)) throw new RequestError('bad-request', `"format": unknown shape ${JSON.stringify(format)}`);
  return format;
}

/** The protocol's state: open handles over shared pools. `handle(line)` answers one request line. */
export class Server {
  private readonly handles = new Map<number, Handle>();
  private readonly pools = new Map<string, SharedPool>();
  private nextHandle = 1;
  readonly version = tagmaskVersion();

  /** The response line (without its newline) to one request line; never throws. */
  async handle(text: string, line: number): Promise<string> {
    let id: unknown = null;
    try {
      let request: unknown;
      try {
        request = JSON.parse(text);
      } catch (error) {
        throw new RequestError('bad-json', `request line ${line} is not valid JSON (${errorMessage(error)})`);
      }
      if (!isObject(request)) throw new RequestError('bad-request', `request line ${line} must be a JSON object`);
      id = writable(request.id) ?? null;
      const body = await this.answer(request);
      return `{"id":${idJson(id)},"ok":true${body.length > 2 ? `,${body.slice(1)}` : '}'}`;
    } catch (error) {
      const code = error instanceof RequestError ? error.code : 'failed';
      return JSON.stringify({ id, ok: false, error: { code, message: errorMessage(error), line } });
    }
  }

  /** The response's fields as a JSON object text. */
  private async answer(request: Record<string, unknown>): Promise<string> {
    const op = field<string>(request, 'op', 'string', true)!;
    switch (op) {
      case 'version': return JSON.stringify({ protocol: PROTOCOL, tagmask: this.version, ops: OPS });
      case 'ping': return '{}';
      case 'open': return JSON.stringify(await this.open(request));
      case 'close': {
        const number = this.handleNumber(request);
        const handle = this.handles.get(number)!;
        this.handles.delete(number);
        if (--handle.pool.handles === 0) this.pools.delete(handle.pool.key);
        return '{}';
      }
      case 'mask': case 'check': case 'show': return this.rollouts(op, request);
      default: throw new RequestError('unknown-op', `unknown "op" ${JSON.stringify(op)}: expected one of ${OPS.join(', ')}`);
    }
  }

  private handleNumber(request: Record<string, unknown>): number {
    const number = field<number>(request, 'handle', 'number', true)!;
    if (!this.handles.has(number)) throw new RequestError('unknown-handle', `no open handle ${number} (open one with {"op": "open", …}; closed handles are gone)`);
    return number;
  }

  private async open(request: Record<string, unknown>) {
    const grammar = field<string>(request, 'grammar', 'string', true)!;
    const tokenizer = field<string>(request, 'tokenizer', 'string', true)!;
    let options: OptionValues;
    try {
      options = readOptions(request.options ?? undefined);
    } catch (error) {
      throw new RequestError('bad-request', errorMessage(error));
    }
    const format = formatOf(request);
    if (grammar === 'auto') throw new RequestError('bad-request', '"grammar": auto needs a whole file to detect from; name the grammar (tagmask detect finds it)');
    if (this.handles.size >= MAX_HANDLES) throw new RequestError('too-many-handles', `${MAX_HANDLES} handles are open: close some first`);
    let shared: SharedPool;
    try {
      // Keyed by what the names resolve to, so `search-r1` and its path share one pool.
      const key = JSON.stringify([resolveGrammarPath(grammar), resolveTokenizerPath(tokenizer)]);
      shared = this.pools.get(key) ?? { key, pool: await openPool(grammar, tokenizer), handles: 0 };
      shared.pool.get(options); // bad option values fail here, at open
      this.pools.set(key, shared);
    } catch (error) {
      throw new RequestError('open-failed', errorMessage(error));
    }
    shared.handles++;
    const number = this.nextHandle++;
    this.handles.set(number, { pool: shared, options, format });
    return { handle: number, grammar: shared.pool.grammar.grammar.name ?? grammar, tokenizer: shared.pool.tokenizer.path };
  }

  private rollouts(op: 'mask' | 'check' | 'show', request: Record<string, unknown>): string {
    const handle = this.handles.get(this.handleNumber(request))!;
    const rollouts = field<unknown[]>(request, 'rollouts', 'array', true)!;
    const format = formatOf(request) ?? handle.format;
    const maskFormat = field<string>(request, 'mask_format', 'string', false);
    if (maskFormat !== undefined && maskFormat !== 'list' && maskFormat !== 'runs') throw new RequestError('bad-request', `"mask_format" must be "list" or "runs", got ${JSON.stringify(maskFormat)}`);
    const observationWeight = field<number>(request, 'observation_weight', 'number', false);
    const spans = field<string>(request, 'spans', 'string', false);
    if (spans !== undefined && spans !== 'tokens' && spans !== 'chars') throw new RequestError('bad-request', `"spans" must be "tokens" or "chars", got ${JSON.stringify(spans)}`);
    const pool = handle.pool.pool;
    const table = pool.tokenizer.table;
    // The handle's options under each rollout's own.
    const context: MaskContext = { tokenizer: pool.tokenizer, grammar: pool.grammar, get: (options) => pool.get({ ...handle.options, ...options }) };
    const results: string[] = [];
    let failed = 0;
    rollouts.forEach((value, index) => {
      let rolloutId: unknown = isObject(value) ? value.id ?? null : null;
      try {
        const line = readShaped(value, format, op === 'check');
        // Every rollout of one entry is done before any is answered: a failure answers the entry once.
        const done: string[] = [];
        for (const rollout of line.rollouts) {
          rolloutId = rollout.id;
          const id = idJson(rollout.id);
          const prepared = prepareRollout(context, rollout);
          const result = maskPrepared(context, prepared);
          const head = `{"index":${index},"id":${id},`;
          if (op === 'show') { done.push(`${head}"text":${JSON.stringify(showRollout(table, rollout.id, prepared.rollout.tokens, result, false))}}`); continue; }
          if (op === 'check') {
            const given = prepared.rollout.given!;
            const disagreements = auditPrepared(context, prepared, result)!;
            done.push(head + JSON.stringify({ agree: disagreements.length === 0, tokens: prepared.rollout.tokens.length, shape: line.shape, frame: given.shift ? 'targets' : 'tokens', field: given.field, pattern: auditPattern(context, prepared, result, disagreements), disagreements, diagnostics: result.diagnostics, hints: disagreements.length ? optionHints(context, prepared) : [] }).slice(1));
            continue;
          }
          const out: Record<string, unknown> = {};
          if (maskFormat === 'runs') out.runs = actionRuns(result.mask);
          else if (observationWeight !== undefined) out.weights = weighted(result.mask, observationWeight);
          else out.mask = Array.from(result.mask);
          if (prepared.source !== undefined) out.tokens = Array.from(prepared.rollout.tokens);
          const offsets = spans === 'chars' && prepared.source !== undefined ? tokenCharOffsets(table, prepared.rollout.tokens, prepared.source) : undefined;
          out.spans = spans === 'chars' ? spansWithChars(result.spans, offsets) : result.spans;
          out.diagnostics = result.diagnostics;
          done.push(head + JSON.stringify(out).slice(1));
        }
        results.push(...done);
      } catch (error) {
        failed++;
        results.push(JSON.stringify({ index, id: writable(rolloutId) ?? null, error: errorMessage(error) }));
      }
    });
    return `{"results":[${results.join(',')}],"failed":${failed}}`;
  }
}

async function openPool(grammar: string, tokenizer: string): Promise<MaskerPool> {
  const compiled = loadGrammar(grammar);
  if (needsAttributes(compiled.grammar.tags)) await prepareAttributeReader();
  return new MaskerPool(compiled, await loadTokenizer(tokenizer), {});
}

/**
 * Request lines of a stream, in order, as they complete. Read through the stream (an event-driven pipe), not
 * with blocking reads on descriptor 0: a read blocked in the thread pool would keep SIGTERM's exit waiting.
 */
async function* requestLines(stream: AsyncIterable<Buffer>): AsyncGenerator<{ text: string; number: number }> {
  // The unfinished line, in pieces: a request longer than a chunk is joined once, not once per chunk.
  let pending: Buffer[] = [];
  let number = 0;
  const line = (bytes: Buffer) => ({ text: bytes.toString('utf8').replace(/^\uFEFF/, '').replace(/\r$/, ''), number: ++number });
  for await (const chunk of stream) {
    let start = 0;
    for (let newline = chunk.indexOf(10, start); newline >= 0; newline = chunk.indexOf(10, start)) {
      const piece = chunk.subarray(start, newline);
      const done = line(pending.length ? Buffer.concat([...pending, piece]) : piece);
      pending = [];
      start = newline + 1;
      if (done.text.trim()) yield done;
    }
    if (start < chunk.length) pending.push(chunk.subarray(start));
  }
  if (pending.length) {
    const done = line(Buffer.concat(pending));
    if (done.text.trim()) yield done;
  }
}

/** Serve requests from `input` (stdin by default) until it ends; each response is written out as it is done. */
export async function serve(input: AsyncIterable<Buffer> = process.stdin): Promise<number> {
  const server = new Server();
  const writer = new JsonlWriter(undefined);
  // SIGTERM is handled between requests (each is answered synchronously and written whole): what is answered
  // has gone out, then the process ends.
  const stop = () => { writer.flushThrough(); process.exit(0); };
  process.once('SIGTERM', stop);
  try {
    for await (const line of requestLines(input)) {
      writer.write(`${await server.handle(line.text, line.number)}\n`);
      writer.flushThrough();
    }
    writer.close();
  } finally {
    process.removeListener('SIGTERM', stop);
  }
  return 0;
}

export const serveCommand: CommandSpec = {
  name: 'serve',
  summary: 'answer mask, check and show requests as JSON lines on stdin/stdout (for trainers; the Python package uses it)',
  positionals: '',
  maxPositionals: 0,
  description: [
    `protocol ${PROTOCOL}: one JSON request per line, one response line each, written as soon as it is done, with the request's "id"`,
    '{"id", "op": "open", "grammar", "tokenizer", "options"?, "format"?} → {"id", "ok": true, "handle"}',
    '{"id", "op": "mask"|"check"|"show", "handle", "rollouts": [any shape mask reads…]} → {"id", "ok": true, "results": [{"index", "id", …}…], "failed"}',
    '{"id", "op": "close", "handle"}, {"id", "op": "ping"}, {"id", "op": "version"} → {"id", "ok": true, …}',
    'a bad request → {"id", "ok": false, "error": {"code", "message", "line"}}; a bad rollout → its result {"index", "id", "error"}',
    'end of input or SIGTERM ends it (exit 0)',
  ],
  flags: {},
  examples: ['tagmask serve < requests.jsonl > responses.jsonl', 'echo \'{"id": 1, "op": "version"}\' | tagmask serve', 'python -c "import tagmask; print(tagmask.Masker(\'search-r1\', \'./Qwen3-8B\').mask(ids).mask)"'],
  run: () => serve(),
};
