/**
 * `grammar check` knows every limit `mask` has, and says so with a location, quickly: a grammar that passes
 * the check is never refused when a masker is built from it. The audit's grammars: 400 tags (29 s and 1 GB
 * before, then refused by mask), 12 tags that all contain each other (over 120 s), a chain of 40 nested tags
 * (passed the check, then "needs 42 automata; at most 32" at mask time), and a file nested 50,000 deep.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildByteTable, checkGrammarFile, Masker } from '../../src/index.ts';
import { readFileSync } from 'node:fs';

const dir = mkdtempSync(join(tmpdir(), 'tagmask-limits-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const table = buildByteTable(JSON.parse(readFileSync(new URL('../../samples/tutorial-404/tokenizer.json', import.meta.url), 'utf8')));

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
  it('400 tags: a located too-many-automata error', HANG_GUARD, () => {
    const { errors } = check(grammarWith(tags(400)));
    expect(errors.map((issue) => [issue.code, issue.path])).toEqual([['too-many-automata', 'tags']]);
    expect(errors[0].place.line).toBeGreaterThan(1);
  });

  it('a chain of 40 nested tags is refused by the check, not first by mask', () => {
    const { errors } = check(grammarWith(tags(40, (i, names) => (i + 1 < names.length ? [names[i + 1]] : []))));
    expect(errors.map((issue) => issue.code)).toEqual(['too-many-automata']);
  });

  it('12 tags that all contain each other: a located too-many-states error', HANG_GUARD, () => {
    const { errors } = check(grammarWith(tags(12, (i, names) => names.filter((_, j) => j !== i))));
    expect(errors.map((issue) => [issue.code, issue.path])).toEqual([['too-many-states', 'tags.t0.contains']]);
  });

  it('a grammar within the limits passes the check and a masker is built from it (30 tags: 32 automata)', () => {
    const { checked, errors } = check(grammarWith(tags(30)));
    expect(errors).toEqual([]);
    expect(checked.compiled!.dfas.length).toBe(32);
    // One more tag is one automaton too many, and the check says so.
    expect(check(grammarWith(tags(31))).errors.map((issue) => issue.code)).toEqual(['too-many-automata']);
    expect(() => new Masker(checked.compiled!, table)).not.toThrow();
  });

  it('a file nested 50,000 levels deep is a located syntax error, not a stack overflow', () => {
    const file = write(`{"name":"x","prompt":{"ends_after":["a"]},"tags":{"t":{"open":"<t>","x":${'['.repeat(50_000)}${']'.repeat(50_000)}}}}`);
    const { errors } = check(file);
    expect(errors.map((issue) => issue.code)).toEqual(['grammar-shape']);
    expect(errors[0].message).toMatch(/nested more than \d+ levels deep/);
    expect(errors[0].place).toEqual({ line: 1, column: expect.any(Number) });
  });
});
