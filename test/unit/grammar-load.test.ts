/**
 * Grammar files that are wrong must be rejected with `file:line:column` pointing at the offending JSON
 * value (or, for a missing key, at the object that lacks it) and with the JSON path.
 *
 * Every line:column below was counted by hand from the fixture text (1-based; the fixtures are written
 * line by line so the columns can be read off the source). Nothing is copied from the code's output.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { bundledGrammarNames, checkGrammarFile, formatIssue, GrammarError, loadGrammar, type LocatedIssue } from '../../src/grammar/load.ts';

const dir = mkdtempSync(join(tmpdir(), 'tagmask-grammar-load-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let counter = 0;
/** Write the lines to a fresh file in the temp dir and return its path. */
function fixture(lines: string[]): string {
  const file = join(dir, `grammar-${++counter}.json`);
  writeFileSync(file, lines.join('\n'));
  return file;
}

const errorsOf = (issues: LocatedIssue[]) => issues.filter((issue) => issue.severity === 'error');
const where = (issue: LocatedIssue) => `${issue.place.line}:${issue.place.column}`;

/** The checked file must fail to load, and the GrammarError must carry the same errors with file:line:column. */
function expectRejected(file: string): LocatedIssue[] {
  const checked = checkGrammarFile(file);
  const errors = errorsOf(checked.issues);
  expect(errors.length).toBeGreaterThan(0);
  let thrown: unknown;
  try {
    loadGrammar(file);
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(GrammarError);
  const grammarError = thrown as GrammarError;
  expect(grammarError.file).toBe(file);
  for (const issue of errors) {
    expect(issue.file).toBe(file);
    expect(grammarError.message).toContain(`${file}:${issue.place.line}:${issue.place.column}:`);
  }
  return errors;
}

// A header line the fixtures reuse: `  "prompt": { "ends_after": ["<|im_start|>assistant\n"] },`
const PROMPT_LINE = '  "prompt": { "ends_after": ["<|im_start|>assistant\\n"] },';

describe('invalid JSON', () => {
  it('a missing comma is reported where the next member starts', () => {
    const file = fixture([
      '{',
      '  "name": "broken",',
      '  "prompt": { "ends_after": ["A"] }',
      '  "tags": {}',
      '}',
    ]);
    const errors = expectRejected(file);
    expect(errors).toHaveLength(1);
    expect(errors[0].code).toBe('grammar-shape');
    // line 4 `  "tags": {}`: the quote of "tags" is column 3
    expect(where(errors[0])).toBe('4:3');
    expect(errors[0].message).toMatch(/not valid JSON/);
  });

  it('a trailing comma in an object is reported at the closing brace', () => {
    const file = fixture([
      '{',
      '  "name": "x",',
      '  "prompt": { "ends_after": ["A"], },',
      '  "tags": {}',
      '}',
    ]);
    const errors = expectRejected(file);
    expect(errors).toHaveLength(1);
    // `  "prompt": { "ends_after": ["A"], },`: `"prompt"` 3-10, `:` 11, `{` 13, `"ends_after"` 15-26,
    // `[` 29, `"A"` 30-32, `]` 33, `,` 34, space 35, `}` 36
    expect(where(errors[0])).toBe('3:36');
  });

  it('a file that ends inside an object is reported at the end', () => {
    const file = fixture(['{', '  "name": "x"', '']);
    const errors = expectRejected(file);
    expect(errors).toHaveLength(1);
    expect(where(errors[0])).toBe('3:1');
  });

  it('a duplicate key is reported at the second key', () => {
    const file = fixture([
      '{',
      '  "name": "x",',
      PROMPT_LINE,
      '  "name": "y"',
      '}',
    ]);
    const errors = expectRejected(file);
    expect(errors).toHaveLength(1);
    expect(where(errors[0])).toBe('4:3');
    expect(errors[0].message).toContain('"name"');
  });
});

describe('shape errors', () => {
  it('an unknown field inside a tag points at its value, with its path', () => {
    const file = fixture([
      '{',
      '  "name": "t",',
      PROMPT_LINE,
      '  "tags": {',
      '    "think": { "open": "<think>", "clsoe": "</think>" }',
      '  }',
      '}',
    ]);
    const errors = expectRejected(file);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ code: 'grammar-shape', path: 'tags.think.clsoe' });
    // `    "think": { "open": "<think>", "clsoe": "</think>" }`: `"think"` 5-11, `{` 14, `"open"` 16-21,
    // `"<think>"` 24-32, `"clsoe"` 35-41, `:` 42, value 44
    expect(where(errors[0])).toBe('5:44');
    expect(errors[0].message).toContain('clsoe');
    expect(formatIssue(errors[0])).toBe(`${file}:5:44: error grammar-shape at tags.think.clsoe: ${errors[0].message}`);
  });

  it('an unknown top-level field points at its value', () => {
    const file = fixture([
      '{',
      '  "name": "t",',
      PROMPT_LINE,
      '  "handover": []',
      '}',
    ]);
    const errors = expectRejected(file);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ code: 'grammar-shape', path: 'handover' });
    // `  "handover": []`: `"handover"` 3-12, `:` 13, `[` 15
    expect(where(errors[0])).toBe('4:15');
  });

  it('missing "name" and "prompt" are reported where the root object starts', () => {
    const file = fixture([
      '',
      '  {',
      '    "tags": {}',
      '  }',
    ]);
    const errors = expectRejected(file);
    expect(errors).toHaveLength(2);
    expect(errors.map((issue) => issue.message).sort()).toEqual(['missing "name"', 'missing "prompt"']);
    for (const issue of errors) {
      expect(issue.code).toBe('grammar-shape');
      expect(where(issue)).toBe('2:3');
    }
  });

  it('missing "prompt" alone', () => {
    const file = fixture([
      '{',
      '  "name": "no-prompt"',
      '}',
    ]);
    const errors = expectRejected(file);
    expect(errors).toHaveLength(1);
    expect(errors[0].message).toBe('missing "prompt"');
    expect(where(errors[0])).toBe('1:1');
  });

  it('a prompt that is not an object points at the value', () => {
    const file = fixture([
      '{',
      '  "name": "x",',
      '  "prompt": 5',
      '}',
    ]);
    const errors = expectRejected(file);
    expect(errors).toHaveLength(1);
    expect(errors[0].path).toBe('prompt');
    // `  "prompt": 5`: `"prompt"` 3-10, `:` 11, value 13
    expect(where(errors[0])).toBe('3:13');
  });

  it('an option declared without a default points at the option', () => {
    const file = fixture([
      '{',
      '  "name": "t",',
      PROMPT_LINE,
      '  "options": {',
      '    "budget": { "description": "tokens" }',
      '  }',
      '}',
    ]);
    const errors = expectRejected(file);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ code: 'grammar-shape', path: 'options.budget' });
    expect(errors[0].message).toMatch(/default/);
    // `    "budget": { "description": "tokens" }`: `"budget"` 5-12, `:` 13, `{` 15
    expect(where(errors[0])).toBe('5:15');
  });
});

describe('meaning errors', () => {
  it('a handover naming an unknown reply points at that name', () => {
    const file = fixture([
      '{',
      '  "name": "t",',
      PROMPT_LINE,
      '  "tags": { "call": { "open": "<call>", "close": "</call>" } },',
      '  "handovers": [',
      '    { "after": "</call>", "replies": ["result", "reslt"] }',
      '  ],',
      '  "replies": { "result": { "open": "<result>", "close": "</result>" } }',
      '}',
    ]);
    const errors = expectRejected(file);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ code: 'unknown-reply', path: 'handovers[0].replies[1]' });
    expect(errors[0].message).toContain('reslt');
    // `    { "after": "</call>", "replies": ["result", "reslt"] }`: `{` 5, `"after"` 7-13, `"</call>"` 16-24,
    // `"replies"` 27-35, `[` 38, `"result"` 39-46, `,` 47, `"reslt"` 49
    expect(where(errors[0])).toBe('6:49');
  });

  it('a reply with both "text" and "open" points at the reply', () => {
    const file = fixture([
      '{',
      '  "name": "t",',
      PROMPT_LINE,
      '  "tags": { "call": { "open": "<call>", "close": "</call>" } },',
      '  "handovers": [ { "after": "</call>", "replies": ["obs"] } ],',
      '  "replies": {',
      '    "obs": { "text": "Try again.", "open": "<obs>", "close": "</obs>" }',
      '  }',
      '}',
    ]);
    const errors = expectRejected(file);
    expect(errors.length).toBeGreaterThanOrEqual(1);
    const both = errors.find((issue) => issue.code === 'reply-shape' && issue.path === 'replies.obs');
    expect(both).toBeDefined();
    // `    "obs": { …`: `"obs"` 5-9, `:` 10, `{` 12
    expect(where(both!)).toBe('7:12');
    // every error of this fixture is about that reply
    for (const issue of errors) expect(issue.path.startsWith('replies.obs')).toBe(true);
  });

  it('a tag literal contained in another is a literal-overlap at the containing literal', () => {
    const file = fixture([
      '{',
      '  "name": "t",',
      PROMPT_LINE,
      '  "tags": {',
      '    "think": { "open": "<think>", "close": "</think>" },',
      '    "th": { "open": "think" }',
      '  }',
      '}',
    ]);
    const errors = expectRejected(file);
    // "<think>" and "</think>" both contain "think"
    expect(errors.map((issue) => [issue.code, issue.path, where(issue)]).sort()).toEqual([
      ['literal-overlap', 'tags.think.close', '5:44'],
      ['literal-overlap', 'tags.think.open', '5:24'],
    ]);
  });

  it('two tags with the same literal are a literal-overlap', () => {
    const file = fixture([
      '{',
      '  "name": "t",',
      PROMPT_LINE,
      '  "tags": {',
      '    "a": { "open": "<x>" },',
      '    "b": { "open": "<x>" }',
      '  }',
      '}',
    ]);
    const errors = expectRejected(file);
    expect(errors).toHaveLength(1);
    expect(errors[0].code).toBe('literal-overlap');
    // reported once, on one of the two declarations: `    "b": { "open": "<x>" }`: `"b"` 5-7, `{` 10, `"open"` 12-17, value 20
    expect(['5:20', '6:20']).toContain(where(errors[0]));
  });

  it('a reply whose close is its own open is a literal-overlap at the close (inside it, both are heard)', () => {
    const file = fixture([
      '{',
      '  "name": "t",',
      PROMPT_LINE,
      '  "tags": { "a": { "open": "<a>", "close": "</a>" } },',
      '  "handovers": [{ "after": "</a>", "replies": ["env"] }],',
      '  "replies": { "env": { "open": "<o>", "close": "<o>" } }',
      '}',
    ]);
    const errors = expectRejected(file);
    expect(errors.map((issue) => [issue.code, issue.path, issue.args.rule])).toEqual([['literal-overlap', 'replies.env.close', 'same']]);
    // `  "replies": { "env": { "open": "<o>", "close": "<o>" } }`: "close" is columns 40-46, its value starts at 49.
    expect(where(errors[0])).toBe('6:49');
  });

  it('two interrupting texts found by the same words are a literal-overlap (found by fuzzing: one automaton heard both)', () => {
    const file = fixture([
      '{',
      '  "name": "t",',
      PROMPT_LINE,
      '  "tags": { "a": { "open": "<a>", "close": "</a>" } },',
      '  "replies": {',
      '    "bad": { "text": "\\nERR: invalid\\n", "interrupts": true },',
      '    "worse": { "text": " ERR: invalid", "interrupts": true }',
      '  }',
      '}',
    ]);
    const errors = expectRejected(file);
    // Leading whitespace is not part of what finds an interrupting text, so both are found by `ERR: invalid`.
    expect(errors.map((issue) => [issue.code, issue.path, issue.args.rule, issue.args.detail])).toEqual([['literal-overlap', 'replies.worse.text', 'interrupts-alike', 'ERR: invalid']]);
    expect(errors[0].message).toContain('replies.bad.text');
  });

  it('an interrupting text that begins with a model literal is a literal-overlap: the literal would always be found first', () => {
    const file = fixture([
      '{',
      '  "name": "t",',
      PROMPT_LINE,
      '  "tags": { "a": { "open": "<a>", "close": "</a>" } },',
      '  "replies": { "bad": { "text": "<a> is not allowed here", "interrupts": true } }',
      '}',
    ]);
    const errors = expectRejected(file);
    expect(errors.map((issue) => [issue.code, issue.path, issue.args.rule, issue.args.otherPath])).toEqual([['literal-overlap', 'replies.bad.text', 'interrupt-overlaps', 'tags.a.open']]);
  });

  it('a reply no handover lists: a warning for the reply, and its state can never be reached', () => {
    const file = fixture([
      '{',
      '  "name": "t",',
      PROMPT_LINE,
      '  "tags": { "a": { "open": "<a>", "close": "</a>" } },',
      '  "handovers": [{ "after": "</a>", "replies": ["used"] }],',
      '  "replies": { "used": { "open": "<o>", "close": "</o>" }, "spare": { "open": "<p>", "close": "</p>" } }',
      '}',
    ]);
    const checked = checkGrammarFile(file);
    expect(checked.issues.map((issue) => [issue.code, issue.severity])).toEqual([['unreachable-reply', 'warning'], ['unreachable-state', 'warning']]);
    expect(checked.issues[1].message).toContain('reply-spare');
  });

  it('an option referenced as "$x" that is not declared points at the reference', () => {
    const file = fixture([
      '{',
      '  "name": "t",',
      PROMPT_LINE,
      '  "tags": { "call": { "open": "<call>", "close": "</call>" } },',
      '  "handovers": [ { "after": "</call>", "replies": ["obs"] } ],',
      '  "replies": {',
      '    "obs": { "open": "<obs>", "close": "</obs>", "max_tokens": "$budget" }',
      '  }',
      '}',
    ]);
    const errors = expectRejected(file);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ code: 'unknown-option', path: 'replies.obs.max_tokens' });
    expect(errors[0].message).toContain('budget');
    // `"obs"` 5-9, `{` 12, `"open"` 14-19, `"<obs>"` 22-28, `"close"` 31-37, `"</obs>"` 40-47,
    // `"max_tokens"` 50-61, `:` 62, value 64
    expect(where(errors[0])).toBe('7:64');
  });

  // Regression: paths of keys that are not identifiers (`replies["web result"]`) must be built the same way
  // by the checks and by the located JSON parser.
  it('the same undeclared option under a reply whose name is not an identifier still points at the reference', () => {
    // JSON allows any key; the issue must still be placed on the offending value, not on an enclosing object.
    const file = fixture([
      '{',
      '  "name": "t",',
      PROMPT_LINE,
      '  "tags": { "call": { "open": "<call>", "close": "</call>" } },',
      '  "handovers": [ { "after": "</call>", "replies": ["web result"] } ],',
      '  "replies": {',
      '    "web result": { "open": "<obs>", "close": "</obs>", "max_tokens": "$budget" }',
      '  }',
      '}',
    ]);
    const errors = expectRejected(file);
    expect(errors).toHaveLength(1);
    expect(errors[0].code).toBe('unknown-option');
    // `"web result"` 5-16, `:` 17, `{` 19, `"open"` 21-26, `"<obs>"` 29-35, `"close"` 38-44, `"</obs>"` 47-54,
    // `"max_tokens"` 57-68, `:` 69, value 71
    expect(where(errors[0])).toBe('7:71');
  });
  // Every place a grammar names an option with "$name": each undeclared one is reported under its own path,
  // named without the "$" (the file's spelling is "$name", the option is "name").
  it('every "$option" reference, undeclared, is reported at its own path by its bare name', () => {
    const file = fixture([
      '{',
      '  "name": "t",',
      '  "prompt": { "ends_after": ["<a>"], "then_optional": ["<p>", { "text": "<q>", "when": "$o2", "unless": "$o3" }], "optional_when": "$o1" },',
      '  "tags": { "call": { "open": "<call>", "close": "</call>" } },',
      '  "handovers": [ { "after": "</call><o>", "overlap": "<o>", "overlap_when": "$o4", "replies": ["obs"] } ],',
      '  "replies": {',
      '    "obs": { "open": "<o>", "close": "</o>", "max_tokens": "$o5", "optional_when": "$o6",',
      '             "close_then_optional": ["<r>", { "text": "<s>", "when": "$o7", "unless": "$o8" }] }',
      '  }',
      '}',
    ]);
    const unknown = checkGrammarFile(file).issues.filter((issue) => issue.code === 'unknown-option');
    expect(unknown.map((issue) => [issue.path, issue.message.match(/no option named "?(\$?\w+)/)?.[1]]).sort()).toEqual([
      ['handovers[0].overlap_when', 'o4'],
      ['prompt.optional_when', 'o1'],
      ['prompt.then_optional[0]', 'o1'],
      ['prompt.then_optional[1]', 'o2'],
      ['prompt.then_optional[1].unless', 'o3'],
      ['replies.obs.close_then_optional[0]', 'o6'],
      ['replies.obs.close_then_optional[1]', 'o7'],
      ['replies.obs.close_then_optional[1].unless', 'o8'],
      ['replies.obs.max_tokens', 'o5'],
      ['replies.obs.optional_when', 'o6'],
    ]);
  });
});

describe('bundled grammars', () => {
  it('are search-r1 and tutorial at least', () => {
    expect(bundledGrammarNames()).toEqual(expect.arrayContaining(['search-r1', 'tutorial']));
  });

  it.each(bundledGrammarNames())('%s loads with no errors', (name) => {
    const compiled = loadGrammar(name);
    expect(compiled.grammar.name).toBe(name);
    expect(compiled.issues.filter((issue) => issue.severity === 'error')).toEqual([]);
  });

  it.each(bundledGrammarNames())('%s: checkGrammarFile reports no error and compiles', (name) => {
    const checked = checkGrammarFile(fileURLToPath(new URL(`../../grammars/${name}.json`, import.meta.url)));
    expect(checked.issues.filter((issue) => issue.severity === 'error')).toEqual([]);
    expect(checked.compiled).toBeDefined();
  });

  it('an unknown grammar name is an error, not a crash elsewhere', () => {
    expect(() => loadGrammar('no-such-grammar-anywhere')).toThrow(/grammar not found/);
  });
});

describe('the README stays true', () => {
  it('the worked grammar example in the README checks with no error', () => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    const example = /```json\n(\{\n {2}"name": "my-agent"[\s\S]*?)\n```/.exec(readme);
    expect(example).not.toBeNull();
    const file = join(mkdtempSync(join(tmpdir(), 'tagmask-readme-')), 'my-agent.json');
    writeFileSync(file, example![1]);
    const checked = checkGrammarFile(file);
    expect(checked.issues.filter((issue) => issue.severity === 'error')).toEqual([]);
    expect(checked.compiled?.grammar.name).toBe('my-agent');
  });
});
