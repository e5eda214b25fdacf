/**
 * The HTML report: one self-contained page (no network, no external scripts or fonts; opens from file://)
 * showing rollouts with their spans, token pieces, diagnostics and, for an audit, the mask under audit
 * beside tagmask's with every disagreement and its direction.
 *
 * The page carries library data, not markup: each distinct token piece once (its bytes, base64), and per
 * rollout its token indices into that table (a variable-length code, 1–4 characters per token), its spans as
 * (kind, length) pairs, its diagnostics, the audited mask as run lengths and the disagreements. The script
 * in the page renders one rollout at a time and lists rollouts by pages, so 10,000 rollouts stay usable and
 * the file grows linearly with the tokens. Everything from the data reaches the document through
 * `textContent` only; the data block escapes `<`, `>` and `&`, so token text quoting `</script>` cannot end it.
 * A Content-Security-Policy with the hashes of the page's own style and script forbids any other script and
 * every network request.
 */
import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import type { MaskResult } from '../masker.ts';
import type { Disagreement, DisagreementClass, Direction, Frame } from '../conformance.ts';
import { KNOWN, SPECIAL, pieceOf, type ByteTable } from '../tokenizer/table.ts';
import { PAGE_STYLE } from './html-page.ts';
import { PAGE_SCRIPT } from './page-script.ts';
import type { PageData, PageRollout } from './page-data.ts';
import { JsonlWriter } from '../io/jsonl.ts';
import { idText } from '../io/lines.ts';
import type { Pattern } from '../patterns.ts';
import { causeWords, disagreementWords } from './text.ts';

export interface HtmlRollout {
  id: unknown;
  tokens: ArrayLike<number>;
  /** tagmask's result; absent when the rollout could not be masked (then `error` says why). */
  result?: MaskResult;
  /** The mask under audit as it was read, and the library's disagreements between it and tagmask's. */
  audit?: {
    mask: ArrayLike<number>; frame: Frame; disagreements: Disagreement[]; /** Its name, when not the report's `side`. */ side?: string;
    /** The pattern the whole mask follows, and the option values under which it agrees (check). */
    pattern?: Pattern; hints?: Array<{ option: string; value: number | null }>;
  };
  error?: string;
  /** A group the page can filter by (conformance: suite and check). */
  group?: string;
  /** Where the rollout came from (`file:line`). */
  source?: string;
  /** Free notes shown with the rollout (conformance: splits of the trajectory). */
  notes?: string[];
}

export interface HtmlReportOptions {
  title: string;
  /** The command line or a description of what produced the page. */
  command?: string;
  /** The audited side's name: `given` (check), `construction` or `merge` (conformance). */
  side?: string;
  /** Compress the embedded data (gzip, read back by the browser's DecompressionStream): `auto` above 1 MB. */
  compress?: boolean | 'auto';
}

const CLASSES: DisagreementClass[] = ['mask-mismatch', 'straddling-token'];
const DIRECTIONS: [Direction, Direction] = ['trains tokens the model did not sample', 'leaves model tokens untrained'];
/** 64 characters that need no escaping in JSON or HTML: the token code's alphabet. */
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const ALPHABET_CODES = Uint8Array.from(ALPHABET, (char) => char.charCodeAt(0));
const COMPRESS_ABOVE = 1 << 20;

interface Summary {
  rollouts: number;
  failed: number;
  tokens: number;
  actionTokens: number;
  audited: number;
  disagreeing: number;
  targetFrame: number;
  diagnostics: Map<string, { count: number; rollouts: number }>;
  /** `class|direction` → runs and tokens. */
  disagreements: Map<string, { runs: number; tokens: number }>;
  /** Part code → disagreeing runs holding that part; pattern code → rollouts following it. */
  parts: Map<string, number>;
  patterns: Map<string, number>;
}

/** Escape text for HTML content and attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);
}

/**
 * JSON text made inert inside `<script type="application/json">`: `<`, `>`, `&` (and the two line
 * separators) become `\uXXXX` escapes, which JSON.parse reads back as the same characters.
 */
export function inertJson(json: string): string {
  return json.replace(/[<>&\u2028\u2029]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

export class HtmlReport {
  private readonly pieceIndex = new Map<ByteTable, Map<number, number>>();
  private readonly pieces: string[] = [];
  private readonly ids: number[] = [];
  private readonly special: number[] = [];
  private readonly unknown: number[] = [];
  private readonly kinds: string[] = [];
  private readonly kindIndex = new Map<string, number>();
  private readonly codes: string[] = [];
  private readonly codeIndex = new Map<string, number>();
  private readonly groups: string[] = [];
  private readonly groupIndex = new Map<string, number>();
  private readonly rollouts: string[] = [];
  private tokenBuffer = new Uint8Array(1 << 16);
  readonly summary: Summary = {
    rollouts: 0, failed: 0, tokens: 0, actionTokens: 0, audited: 0, disagreeing: 0, targetFrame: 0, diagnostics: new Map(), disagreements: new Map(), parts: new Map(), patterns: new Map(),
  };

  constructor(readonly options: HtmlReportOptions) {}

  get count(): number { return this.rollouts.length; }

  /** Add one rollout; `table` is the byte table of the tokenizer that encoded it. */
  add(table: ByteTable, rollout: HtmlRollout): void {
    const { result, audit } = rollout;
    const summary = this.summary;
    summary.rollouts++;
    if (rollout.error !== undefined) summary.failed++;
    const item: PageRollout = { i: rollout.id === undefined || rollout.id === null ? '' : idText(rollout.id), t: '' };
    if (rollout.group !== undefined) item.g = this.indexOf(this.groups, this.groupIndex, rollout.group);
    if (rollout.source !== undefined) item.src = rollout.source;
    item.t = this.encodeTokens(table, rollout.tokens);
    if (result) {
      summary.tokens += rollout.tokens.length;
      const spans: number[] = [];
      const attrs: Record<number, Record<string, string>> = {};
      result.spans.forEach((span, index) => {
        spans.push(this.indexOf(this.kinds, this.kindIndex, `${span.role === 'action' ? 'a' : 'o'}:${span.tag}`), span.end - span.start);
        if (span.role === 'action') summary.actionTokens += span.end - span.start;
        if (span.attrs && Object.keys(span.attrs).length) attrs[index] = span.attrs;
      });
      item.s = spans;
      if (Object.keys(attrs).length) item.a = attrs;
      if (result.diagnostics.length) {
        const seen = new Set<string>();
        item.d = result.diagnostics.map((diagnostic) => {
          const entry = summary.diagnostics.get(diagnostic.code) ?? { count: 0, rollouts: 0 };
          entry.count++;
          if (!seen.has(diagnostic.code)) { entry.rollouts++; seen.add(diagnostic.code); }
          summary.diagnostics.set(diagnostic.code, entry);
          return [this.indexOf(this.codes, this.codeIndex, `${diagnostic.severity}:${diagnostic.code}`), diagnostic.token, diagnostic.message];
        });
      }
    }
    if (audit) {
      summary.audited++;
      if (audit.frame === 'targets') { summary.targetFrame++; item.f = 1; }
      item.m = runLengths(audit.mask);
      if (audit.side !== undefined && audit.side !== (this.options.side ?? 'given')) item.sd = audit.side;
      if (audit.disagreements.length) {
        summary.disagreeing++;
        item.x = audit.disagreements.map((run) => {
          const key = `${run.class}|${run.direction}`;
          const entry = summary.disagreements.get(key) ?? { runs: 0, tokens: 0 };
          entry.runs++;
          entry.tokens += run.end - run.start;
          summary.disagreements.set(key, entry);
          for (const part of run.parts ?? []) summary.parts.set(part.code, (summary.parts.get(part.code) ?? 0) + 1);
          const words = disagreementWords(run) + (run.cause ? `; the cause: ${causeWords(run.cause)}` : '');
          return [CLASSES.indexOf(run.class), run.start, run.end, run.given, words, [...new Set((run.parts ?? []).map((part) => part.code))]];
        });
      }
      if (audit.pattern) {
        item.p = [audit.pattern.code, audit.pattern.words];
        summary.patterns.set(audit.pattern.code, (summary.patterns.get(audit.pattern.code) ?? 0) + 1);
      }
      if (audit.hints?.length) item.h = audit.hints.map((hint) => `${hint.option}=${hint.value}`);
    }
    if (rollout.error !== undefined) item.e = rollout.error;
    if (rollout.notes?.length) item.n = rollout.notes;
    this.rollouts.push(JSON.stringify(item));
  }

  private indexOf(list: string[], index: Map<string, number>, key: string): number {
    let found = index.get(key);
    if (found === undefined) { found = list.length; list.push(key); index.set(key, found); }
    return found;
  }

  /**
   * Token ids → indices into the page's piece table, written as a little-endian base-32 code: each character
   * carries 5 bits and says whether another follows. Pieces are numbered by first appearance, so the common
   * ones (template headers, whitespace) get the short codes.
   */
  private encodeTokens(table: ByteTable, tokens: ArrayLike<number>): string {
    let known = this.pieceIndex.get(table);
    if (!known) { known = new Map(); this.pieceIndex.set(table, known); }
    if (this.tokenBuffer.length < tokens.length * 4) this.tokenBuffer = new Uint8Array(tokens.length * 4);
    const out = this.tokenBuffer;
    let length = 0;
    for (let i = 0; i < tokens.length; i++) {
      const id = tokens[i];
      let index = known.get(id);
      if (index === undefined) {
        index = this.pieces.length;
        known.set(id, index);
        const inTable = Number.isInteger(id) && id >= 0 && id < table.size && (table.flags[id] & KNOWN) !== 0;
        this.pieces.push(inTable ? Buffer.from(pieceOf(table, id)).toString('base64') : '');
        this.ids.push(id);
        if (!inTable) this.unknown.push(index);
        else if (table.flags[id] & SPECIAL) this.special.push(index);
      }
      while (index >= 32) { out[length++] = ALPHABET_CODES[32 | (index & 31)]; index >>>= 5; }
      out[length++] = ALPHABET_CODES[index];
    }
    return Buffer.from(out.buffer, out.byteOffset, length).toString('latin1');
  }

  /** The page. */
  render(): string {
    const { options } = this;
    const head: Omit<PageData, 'rollouts'> = {
      title: options.title, side: options.side ?? 'given', classes: CLASSES, directions: DIRECTIONS, alphabet: ALPHABET,
      pieces: this.pieces, ids: this.ids, special: this.special, unknown: this.unknown, kinds: this.kinds, codes: this.codes, groups: this.groups,
    };
    // The rollouts were stringified as they came (add): spliced in as text, not parsed and written again.
    const json = `${JSON.stringify(head).slice(0, -1)},"rollouts":[${this.rollouts.join(',')}]}`;
    const compress = options.compress === true || (options.compress !== false && json.length > COMPRESS_ABOVE);
    // Unicode escapes keep the block inert; gzip + base64 has no character that needs it.
    const data = compress ? gzipSync(json, { level: 6 }).toString('base64') : inertJson(json);
    const hash = (text: string) => `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;
    const policy = `default-src 'none'; style-src ${hash(PAGE_STYLE)}; script-src ${hash(PAGE_SCRIPT)}; img-src data:; form-action 'none'; base-uri 'none'`;
    return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${escapeHtml(policy)}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>${escapeHtml(options.title)}</title>
<style>${PAGE_STYLE}</style>
</head>
<body>
<header class="top"><h1>${escapeHtml(options.title)}</h1>${options.command ? `<p class="command"><code>${escapeHtml(options.command)}</code></p>` : ''}</header>
${this.renderSummary()}
<div class="layout">
<nav id="rollouts" aria-label="Rollouts"><noscript><p>This report needs JavaScript to show rollouts; the summary above is static.</p></noscript></nav>
<main id="view" tabindex="-1" aria-live="polite"></main>
</div>
<div id="tip" role="tooltip" hidden></div>
<script type="application/json" id="tagmask-data" data-encoding="${compress ? 'gzip-base64' : 'json'}">${data}</script>
<script>${PAGE_SCRIPT}</script>
</body>
</html>
`;
  }

  /** The summary table, rendered here so the page says the totals even before (or without) its script. */
  private renderSummary(): string {
    const s = this.summary;
    const side = this.options.side ?? 'given';
    const share = s.tokens ? ((100 * s.actionTokens) / s.tokens).toFixed(1) : '0.0';
    const rows: string[] = [
      `<tr><th scope="row">rollouts</th><td>${s.rollouts}</td><td>${s.failed ? `${s.failed} could not be masked` : ''}</td></tr>`,
      `<tr><th scope="row">tokens</th><td>${s.tokens}</td><td>${s.actionTokens} action (${share}%), ${s.tokens - s.actionTokens} observation</td></tr>`,
    ];
    if (s.audited) {
      rows.push(`<tr><th scope="row">audited masks</th><td>${s.audited}</td><td>${s.audited - s.disagreeing} agree, ${s.disagreeing} disagree${s.targetFrame ? `; ${s.targetFrame} one shorter than their tokens, read in target space` : ''}</td></tr>`);
    }
    const diagnostics = [...s.diagnostics].sort((a, b) => b[1].count - a[1].count)
      .map(([code, entry]) => `<tr><td><button type="button" class="code-filter" data-code="${escapeHtml(code)}">${escapeHtml(code)}</button></td><td>${entry.count}</td><td>${entry.rollouts}</td></tr>`);
    const disagreements: string[] = [];
    for (const cls of CLASSES) {
      for (const direction of DIRECTIONS) {
        const entry = s.disagreements.get(`${cls}|${direction}`);
        if (!entry) continue;
        const mark = direction === DIRECTIONS[0] ? '▲' : '▽';
        disagreements.push(`<tr><td>${escapeHtml(cls)}</td><td><span class="dir dir-${direction === DIRECTIONS[0] ? 'up' : 'down'}">${mark} the ${escapeHtml(side)} mask ${escapeHtml(direction)}</span></td><td>${entry.runs}</td><td>${entry.tokens}</td></tr>`);
      }
    }
    // What the runs' tokens are, and the shapes whole masks follow: the same words stderr uses.
    const named = [...s.patterns].sort((a, b) => b[1] - a[1]).map(([code, count]) => `<tr><td>pattern</td><td><button type="button" class="pattern-filter" data-pattern="${escapeHtml(code)}">${escapeHtml(code)}</button></td><td>${count} rollout(s)</td></tr>`)
      .concat([...s.parts].sort((a, b) => b[1] - a[1]).map(([code, count]) => `<tr><td>part</td><td><button type="button" class="part-filter" data-part="${escapeHtml(code)}">${escapeHtml(code)}</button></td><td>${count} run(s)</td></tr>`));
    return `<section id="summary" aria-labelledby="summary-title">
<h2 id="summary-title">Summary</h2>
<div class="tables">
<table class="totals"><tbody>${rows.join('')}</tbody></table>
<table class="diagnostics"><caption>Diagnostics per code</caption><thead><tr><th scope="col">code</th><th scope="col">count</th><th scope="col">rollouts</th></tr></thead><tbody>${diagnostics.join('') || '<tr><td colspan="3">none</td></tr>'}</tbody></table>
${s.audited ? `<table class="disagreements"><caption>Disagreements per class (${escapeHtml(side)} vs protocol)</caption><thead><tr><th scope="col">class</th><th scope="col">direction</th><th scope="col">runs</th><th scope="col">tokens</th></tr></thead><tbody>${disagreements.join('') || '<tr><td colspan="4">none: every audited mask agrees</td></tr>'}</tbody></table>` : ''}
${named.length ? `<table class="named"><caption>Patterns and parts (${escapeHtml(side)} vs protocol)</caption><thead><tr><th scope="col">kind</th><th scope="col">code</th><th scope="col">count</th></tr></thead><tbody>${named.join('')}</tbody></table>` : ''}
</div>
</section>`;
  }
}

/** A 0/1 mask as alternating run lengths, starting with a run of 0s (possibly empty). */
function runLengths(mask: ArrayLike<number>): number[] {
  const runs: number[] = [];
  let value = 0;
  let length = 0;
  for (let i = 0; i < mask.length; i++) {
    const bit = mask[i] ? 1 : 0;
    if (bit === value) { length++; continue; }
    runs.push(length);
    value = bit;
    length = 1;
  }
  runs.push(length);
  return runs;
}

/**
 * Open the page's output before any work, through the writer `-o` uses (src/io/jsonl.ts): a FIFO or a device
 * is written through, a symlink's target replaced, a regular file written to an exclusively created
 * temporary file renamed into place (removed on a signal or a failed run); a folder or an unwritable place
 * fails here, before the rollouts are read.
 */
export function openHtmlOutput(file: string): JsonlWriter {
  return new JsonlWriter(file, { flag: '--html', gzip: false });
}

/** Write the page to `output` (a path, or a writer from openHtmlOutput): the file is complete or absent. Returns its size in bytes. */
export function writeHtmlReport(output: string | JsonlWriter, report: HtmlReport): number {
  const writer = typeof output === 'string' ? openHtmlOutput(output) : output;
  try {
    const page = report.render();
    writer.write(page);
    writer.close();
    return Buffer.byteLength(page);
  } catch (error) {
    writer.abort();
    throw error;
  }
}

/** "12.3 MB" for a log line. */
export function formatBytes(bytes: number): string {
  return bytes < 1024 ? `${bytes} B` : bytes < 1 << 20 ? `${(bytes / 1024).toFixed(1)} kB` : `${(bytes / (1 << 20)).toFixed(1)} MB`;
}
