/**
 * Each disagreement names the part of the protocol its tokens are (issue 17 item 1). Masks are tinker-cookbook's
 * own (test/fixtures/tinker-renderers.ts: Qwen3Renderer, build_supervised_example, ALL_ASSISTANT_MESSAGES), with
 * bugs planted the way frameworks shipped them; where each bug sits is known from the rendering (token ids),
 * never from tagmask.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { compareMasks, loadGrammar, Masker, type LoadedTokenizer } from '../../src/index.ts';
import { formatDisagreement } from '../../src/report/text.ts';
import { qwen3Example, warmQwen3Tools } from '../fixtures/tinker-renderers.ts';
import { WEATHER_TOOL_TURN, type Message } from '../fixtures/conversations.ts';

let qwen: LoadedTokenizer;
beforeAll(async () => { qwen = await warmQwen3Tools(); }, 120_000);

const conversation = WEATHER_TOOL_TURN;

function withBug(plant: (tokens: number[], weights: number[], id: (text: string) => number) => number[], options: Record<string, number> = { template_think: 0 }) {
  const example = qwen3Example(qwen, conversation);
  const id = (text: string) => qwen.encode(text)[0];
  const given = plant(example.tokens, example.weights.slice(), id);
  const planted = new Set(given.flatMap((bit, i) => (bit === example.weights[i] ? [] : [i])));
  const masker = new Masker(loadGrammar('qwen3-tools'), qwen.table, options);
  const runs = compareMasks(qwen.table, example.tokens, given, masker.mask(example.tokens));
  const caught = new Set(runs.flatMap((run) => Array.from({ length: run.end - run.start }, (_, k) => run.start + k)));
  return { runs, planted, caught, example };
}

describe('the part of every disagreement, in words', () => {
  it('end-of-turn newline trained (verifiers#58): the template\'s "\\n" after <|im_end|>', () => {
    const { runs, planted, caught } = withBug((tokens, weights, id) => weights.map((bit, i) => (i > 0 && tokens[i - 1] === id('<|im_end|>') && tokens[i] === id('\n') ? 1 : bit)));
    expect(planted.size).toBeGreaterThan(0);
    expect(caught).toEqual(planted);
    for (const run of runs) {
      expect(run.parts.map((part) => part.code)).toEqual(['newline-after-stop']);
      expect(formatDisagreement('r', run)).toContain('trains the template\'s "\\n" after "<|im_end|>", which the model did not sample');
      expect(formatDisagreement('r', run)).not.toContain('environment');
    }
  });

  it('stop tokens masked as padding (TRL#6357): the end-of-turn token, left untrained', () => {
    const { runs, planted, caught } = withBug((tokens, weights, id) => weights.map((bit, i) => (tokens[i] === id('<|im_end|>') ? 0 : bit)));
    expect(caught).toEqual(planted);
    for (const run of runs) {
      expect(run.parts.map((part) => part.code)).toEqual(['stop-token']);
      expect(formatDisagreement('r', run)).toContain('leaves the end-of-turn token "<|im_end|>" untrained');
    }
  });

  it('tool response trained (verifiers#11): environment text, the environment\'s reply', () => {
    const { runs, planted, caught } = withBug((tokens, weights, id) => {
      const open = tokens.indexOf(id('<tool_response>'));
      const close = tokens.indexOf(id('</tool_response>'));
      return weights.map((bit, i) => (i >= open && i <= close ? 1 : bit));
    });
    expect(caught).toEqual(planted);
    expect(runs).toHaveLength(1);
    expect(runs[0].parts.map((part) => part.code)).toEqual(['environment-reply']);
    expect(formatDisagreement('r', runs[0])).toContain('trains on environment text: the environment\'s reply (tool-response)');
  });

  it('generation prompt trained (TRL#4147): the template\'s header, never "environment text"', () => {
    const { runs, planted, caught } = withBug((tokens, weights, id) => {
      const header = [id('<|im_start|>'), ...qwen.encode('assistant\n')];
      const out = weights.slice();
      tokens.forEach((_token, i) => { if (header.every((token, k) => tokens[i + k] === token)) for (let k = 0; k < header.length; k++) out[i + k] = 1; });
      return out;
    });
    expect(planted.size).toBeGreaterThan(0);
    expect(caught).toEqual(planted);
    for (const run of runs) {
      expect(run.parts.map((part) => part.code), JSON.stringify(run.text)).toEqual(['header']);
      expect(formatDisagreement('r', run)).not.toContain('environment');
    }
  });

  it('the template\'s empty think block (tinker trains it; template_think=1 reads it as the template\'s): named as a think block', () => {
    const { runs } = withBug((_tokens, weights) => weights, { template_think: 1 });
    expect(runs).toHaveLength(1);
    expect(runs[0].text).toBe('<think>\n\n</think>\n\n');
    expect(runs[0].parts.map((part) => part.code)).toEqual(['template-think']);
  });

  it('correct masks agree: no run, no part', () => {
    expect(withBug((_tokens, weights) => weights).runs).toEqual([]);
  });
});

/**
 * Item 4's misreadings (issue 17): each stream is tinker-cookbook's Qwen3 rendering, changed the way the framework
 * shipped it; where the bug sits is known from the rendering's own token ids.
 */
describe('misreadings: the response start, a missing separator, padding', () => {
  // The last turn has reasoning, so tinker writes its think block with it (no empty block of tinker's own).
  const thinking: Message[] = [
    { role: 'user', content: 'Weather in Paris?' },
    { role: 'assistant', content: [{ type: 'thinking', thinking: 'Look it up.' }, { type: 'text', text: '' }], tool_calls: [{ name: 'get_weather', arguments: { city: 'Paris' } }] },
    { role: 'tool', content: '{"temperature": 14}' },
    { role: 'assistant', content: [{ type: 'thinking', thinking: 'Say it.' }, { type: 'text', text: 'It is 14 °C.' }] },
  ];

  it('verl#2189: an empty think block injected right after prompt_ids is the template\'s under template_think=1, named, on exactly its tokens', () => {
    const example = qwen3Example(qwen, thinking);
    const promptLength = example.weights.indexOf(1); // verl's prompt_ids end after <|im_start|>assistant\n
    const injected = qwen.encode('<think>\n\n</think>\n\n');
    const tokens = [...example.tokens.slice(0, promptLength), ...injected, ...example.tokens.slice(promptLength)];
    const correct = [...example.weights.slice(0, promptLength), ...injected.map(() => 0), ...example.weights.slice(promptLength)];
    const shipped = correct.map((bit, i) => (i >= promptLength && i < promptLength + injected.length ? 1 : bit));
    const masker = new Masker(loadGrammar('qwen3-tools'), qwen.table, { template_think: 1 });
    const result = masker.mask(tokens, { promptLength });
    expect(compareMasks(qwen.table, tokens, correct, result)).toEqual([]);
    const runs = compareMasks(qwen.table, tokens, shipped, result);
    expect(runs.map((run) => [run.start, run.end])).toEqual([[promptLength, promptLength + injected.length]]);
    expect(runs[0].parts.map((part) => part.code)).toEqual(['template-think']);
    expect(formatDisagreement('r', runs[0])).toContain('trains the think block "<think>\\n\\n</think>\\n\\n"');
    // The same stream without prompt_length reads the same (the prompt's end found by the grammar).
    expect(Array.from(masker.mask(tokens).mask)).toEqual(Array.from(result.mask));
  });

  it('verl#3720 as shipped (no "\\n" after <|im_end|>): the disagreement says its cause, the stream leaving the template there', () => {
    const example = qwen3Example(qwen, thinking);
    const imEnd = qwen.encode('<|im_end|>')[0];
    const newline = qwen.encode('\n')[0];
    const dropped = example.tokens.flatMap((token, i) => (token === newline && example.tokens[i - 1] === imEnd ? [i] : []));
    expect(dropped.length).toBeGreaterThan(0);
    const tokens = example.tokens.filter((_token, i) => !dropped.includes(i));
    const given = example.weights.filter((_bit, i) => !dropped.includes(i));
    const result = new Masker(loadGrammar('qwen3-tools'), qwen.table, { template_think: 0 }).mask(tokens);
    const runs = compareMasks(qwen.table, tokens, given, result);
    // The model's first <|im_end|> is followed straight by <|im_start|>: from there the rest is read as nobody's.
    const departure = tokens.indexOf(imEnd, given.indexOf(1)) + 1;
    expect(runs.length).toBeGreaterThan(0);
    for (const run of runs) {
      expect(run.start).toBeGreaterThan(departure);
      expect(run.cause).toMatchObject({ code: 'missing-reply', token: departure });
      const line = formatDisagreement('r', run);
      expect(line).toContain(`the cause: the stream departs from the template at token ${departure} (missing-reply)`);
      expect(line).toContain('verl#3720');
      expect(line).not.toContain('environment text');
    }
    // The model's next turn (given 1) is said to be text tagmask cannot place, not text the model did not sample.
    const trained = runs.filter((run) => run.given === 1);
    expect(trained.length).toBeGreaterThan(0);
    for (const run of trained) expect(run.parts.map((part) => part.code)).toEqual(['after-departure']);
  });

  it('re-rendered history trained (prime-rl#1334, verl#6854): the earlier assistant turns inside a given prompt, named as history', () => {
    // tinker renders the history with thinking stripped and trains it (ALL_ASSISTANT_MESSAGES): as the prompt of the
    // last turn those tokens were never sampled in this form.
    const example = qwen3Example(qwen, thinking);
    const promptLength = example.weights.lastIndexOf(0) + 1; // the last turn's first token
    const planted = new Set(example.weights.flatMap((bit, i) => (bit && i < promptLength ? [i] : [])));
    expect(planted.size).toBeGreaterThan(0);
    const result = new Masker(loadGrammar('qwen3-tools'), qwen.table).mask(example.tokens, { promptLength });
    const correct = example.weights.map((bit, i) => (i < promptLength ? 0 : bit));
    expect(compareMasks(qwen.table, example.tokens, correct, result)).toEqual([]);
    const runs = compareMasks(qwen.table, example.tokens, example.weights, result);
    const caught = new Set(runs.flatMap((run) => Array.from({ length: run.end - run.start }, (_, k) => run.start + k)));
    expect(caught).toEqual(planted);
    for (const run of runs) {
      expect(run.parts.map((part) => part.code)).toEqual(['history-turn']);
      expect(formatDisagreement('r', run)).toContain('trains an earlier assistant turn, re-rendered into the prompt');
    }
  });

  it('TRL#7039-like: completion_mask 1 on the padding after the turn\'s end-of-turn token (a secondary EOS) is padding trained', () => {
    const example = qwen3Example(qwen, thinking);
    const pad = qwen.encode('<|endoftext|>')[0];
    for (const padding of [1, 3]) {
      const tokens = [...example.tokens, ...new Array(padding).fill(pad)];
      const given = [...example.weights, ...new Array(padding).fill(1)];
      const result = new Masker(loadGrammar('qwen3-tools'), qwen.table, { template_think: 0 }).mask(tokens);
      expect(compareMasks(qwen.table, tokens, [...example.weights, ...new Array(padding).fill(0)], result)).toEqual([]);
      const runs = compareMasks(qwen.table, tokens, given, result);
      expect(runs.map((run) => [run.start, run.end])).toEqual([[example.tokens.length, tokens.length]]);
      expect(runs[0].parts.map((part) => part.code)).toEqual(['padding']);
    }
  });
});
