/**
 * `grammar check` knows every limit `mask` has, and says so with a location, quickly: a grammar that passes
 * the check is never refused when a masker is built from it. The audit's grammars: 400 tags (29 s and 1 GB
 * before; now compiled, one automaton for all the model's kinds), 12 tags that all contain each other (over
 * 120 s before; refused), a chain of 40 nested tags (passed the check, then "needs 42 automata; at most 32" at
 * mask time), and a file nested 50,000 deep.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkGrammarFile, Masker } from '../../src/index.ts';
import { encode, table } from '../modules/kit.ts';
import { MAX_AUTOMATA, MAX_LITERAL_BYTES, MAX_LITERALS } from '../../src/grammar/check.ts';

const dir = mkdtempSync(join(tmpdir(), 'tagmask-limits-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let counter = 0;
function write(text: string): string {
  const file = join(dir, `g${++counter}.json`);
  writeFileSync(file, text);
  return file;
}
const grammarWith = (tags: Record<string, unknown>) => write(JSON.stringify({ name: 'limits', prompt: { ends_after: ['<|im_start|>assistant\n'] }, tags }, null, 2));
const tags = (count: number, contains: (i: number, names: string[]) => string[] = () => []) => {
  const names = Array.from({ length: count }, (_, i) => `t${i}`);
  return Object.fromEntries(names.map((name, i) => [name, { open: `<${name}>`, close: `</${name}>`, contains: contains(i, names) }]));
};

function check(file: string) {
  const checked = checkGrammarFile(file);
  return { checked, errors: checked.issues.filter((issue) => issue.severity === 'error') };
}

// These grammars used to run for 29 s to over 120 s. Their time is measured by test/fuzz/audit-probes.ts, never
// asserted here (speed belongs to benchmarks); the test timeout only stops a run that hangs again.
const HANG_GUARD = { timeout: 30_000 };

describe('grammar check knows what mask refuses', () => {
  it('400 tags pass the check, and a masker built from them reads every tag', HANG_GUARD, () => {
    const { checked, errors } = check(grammarWith(tags(400)));
    expect(errors).toEqual([]);
    const masker = new Masker(checked.compiled!, table);
    // The last tag, then the first inside it (a nested-tag note), each span by its own tag's name.
    const pieces: Array<[string, string]> = [['prompt', 'hi<|im_start|>assistant\n'], ['t399', '<t399>a'], ['t0', '<t0>b</t0>'], ['text', ' c']];
    const ids = pieces.flatMap(([, text]) => encode(text));
    const result = masker.mask(ids);
    let at = 0;
    const want = pieces.map(([tag, text]) => { const start = at; at += encode(text).length; return [tag, start, at]; });
    expect(result.spans.map((span) => [span.tag, span.start, span.end])).toEqual(want);
    expect(result.diagnostics.map((item) => item.code)).toEqual(['nested-tag']);
  });

  it('a chain of 40 nested tags passes the check and builds a masker (kinds nest at most 4 deep)', () => {
    const { checked, errors } = check(grammarWith(tags(40, (i, names) => (i + 1 < names.length ? [names[i + 1]] : []))));
    expect(errors).toEqual([]);
    expect(() => new Masker(checked.compiled!, table)).not.toThrow();
  });

  it('12 tags that all contain each other: a located too-many-states error', HANG_GUARD, () => {
    const { errors } = check(grammarWith(tags(12, (i, names) => names.filter((_, j) => j !== i))));
    expect(errors.map((issue) => [issue.code, issue.path])).toEqual([['too-many-states', 'tags.t0.contains']]);
  });

  it('each reply with a close is an automaton of its own: more than the limit is a located error from the check', () => {
    const withReplies = (count: number) => {
      const names = Array.from({ length: count }, (_, i) => `r${i}`);
      return write(JSON.stringify({
        name: 'replies', prompt: { ends_after: ['<|im_start|>assistant\n'] }, tags: { call: { open: '<call>', close: '</call>' } },
        handovers: [{ after: '</call>', replies: names }],
        replies: Object.fromEntries(names.map((name) => [name, { open: `<${name}>`, close: `</${name}>` }])),
      }, null, 2));
    };
    // The prompt's automaton, the model's, and one per reply.
    const within = check(withReplies(MAX_AUTOMATA - 2));
    expect(within.errors).toEqual([]);
    expect(within.checked.compiled!.dfas.length).toBe(MAX_AUTOMATA);
    expect(() => new Masker(within.checked.compiled!, table)).not.toThrow();
    const over = check(withReplies(MAX_AUTOMATA - 1)).errors;
    expect(over.map((issue) => [issue.code, issue.path])).toEqual([['too-many-automata', 'replies']]);
    expect(over[0].place.line).toBeGreaterThan(1);
  });

  it('more literals than the limit, or more literal bytes: a located grammar-too-large, before anything quadratic', () => {
    // Headers are not limited by the kind states: only the literal count bounds them.
    const headers = Array.from({ length: MAX_LITERALS + 10 }, (_, i) => `<h${i}>`);
    const many = check(write(JSON.stringify({ name: 'many', prompt: { ends_after: ['Go:\n'] }, tags: {}, headers }, null, 2))).errors;
    // The prompt's end is literal 0, so header MAX_LITERALS - 1 is the first one past the limit.
    expect(many.map((issue) => [issue.code, issue.path])).toEqual([['grammar-too-large', `headers[${MAX_LITERALS - 1}]`]]);
    expect(many[0].place.line).toBeGreaterThan(MAX_LITERALS);
    // A 1 MB close once took 8 s and 2.3 GB to compile (a dense automaton row per byte).
    const long = check(grammarWith({ a: { open: '<a>', close: `</a>${'x'.repeat(MAX_LITERAL_BYTES)}` } })).errors;
    expect(long.map((issue) => [issue.code, issue.path])).toEqual([['grammar-too-large', 'tags.a.close']]);
    // Just under the byte limit still compiles and builds a masker.
    const fits = check(grammarWith({ a: { open: '<a>', close: `</a>${'x'.repeat(MAX_LITERAL_BYTES - 100)}` } }));
    expect(fits.errors).toEqual([]);
    expect(() => new Masker(fits.checked.compiled!, table)).not.toThrow();
  });

  it('a file nested 50,000 levels deep is a located syntax error, not a stack overflow', () => {
    const file = write(`{"name":"x","prompt":{"ends_after":["a"]},"tags":{"t":{"open":"<t>","x":${'['.repeat(50_000)}${']'.repeat(50_000)}}}}`);
    const { errors } = check(file);
    expect(errors.map((issue) => issue.code)).toEqual(['grammar-shape']);
    expect(errors[0].message).toMatch(/nested more than \d+ levels deep/);
    expect(errors[0].place).toEqual({ line: 1, column: expect.any(Number) });
  });
});
