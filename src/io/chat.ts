/**
 * Chat messages (`{"messages": [...], "tools"?: [...]}`, OpenAI / Hugging Face form) rendered through the
 * tokenizer's own chat template (tokenizer_config.json, apply_chat_template semantics).
 *
 * The mask is then known twice: rebuilt by the grammar from the rendered stream, and from which message
 * produced each token. An assistant message owns the text that changes when the model's part of it (content,
 * reasoning_content, tool_calls) is replaced by a mark and the conversation rendered again: the two renderings differ in
 * one region, which is what the model wrote; the special token right after it (`<|im_end|>`, `<|eot_id|>`) is
 * the stop token the model sampled. Rendering prefixes does not work for every template: Qwen3's writes an empty
 * `<think></think>` into whichever assistant turn is last, so a prefix is not a prefix of the whole. Where the
 * region does not hold the message's content (a template that rewrites it), `message-not-attributed` says so.
 */
import type { Diagnostic } from '../diagnostics.ts';
import type { ChatMessage, LoadedTokenizer } from '../tokenizer/load.ts';
import { pieceOf } from '../tokenizer/table.ts';
import type { MessagesRollout, TokenRollout } from './shapes.ts';
import { diagnostic, specialTexts } from './text.ts';

export interface PreparedMessages {
  rollout: TokenRollout;
  diagnostics: Diagnostic[];
  source: string;
}

const MARK = '\uE000';

/** Template variables every rollout gets (`--set` does not reach templates; a line may bring `template_args`). */
export function prepareMessages(tokenizer: LoadedTokenizer, rollout: MessagesRollout, templateArgs: Record<string, unknown> = {}): PreparedMessages {
  const messages = rollout.messages as ChatMessage[];
  const whole = tokenizer.applyChatTemplate(messages, { ...templateArgs, tools: rollout.tools ?? null }).text;
  const tokens = tokenizer.encode(whole);
  const specials = specialTexts(tokenizer.table).sort((a, b) => b.length - a.length);
  const diagnostics: Diagnostic[] = [];

  // Action character ranges in `whole`, from the assistant messages.
  const ranges: Array<[number, number]> = [];
  messages.forEach((message, k) => {
    if (message.role !== 'assistant') return;
    // A private-use character the rendering cannot hold elsewhere: the common prefix and suffix stop exactly at it.
    const emptied = messages.map((other, i) => (i === k ? { role: 'assistant', content: MARK } : other));
    const without = tokenizer.applyChatTemplate(emptied, { ...templateArgs, tools: rollout.tools ?? null }).text;
    let start = 0;
    while (start < whole.length && start < without.length && whole[start] === without[start]) start++;
    let tail = 0;
    while (tail < whole.length - start && tail < without.length - start && whole[whole.length - 1 - tail] === without[without.length - 1 - tail]) tail++;
    let end = whole.length - tail;
    const content = typeof message.content === 'string' ? message.content.trim() : '';
    if (end <= start || (content && !whole.slice(start, end).includes(content))) {
      diagnostics.push(diagnostic('message-not-attributed', 0, {
        name: `messages[${k}]`,
        detail: end <= start ? 'the template renders it the same whatever it holds' : 'the text that changes with it does not hold its content',
      }));
      return;
    }
    // The model's stop token follows what it wrote.
    const stop = specials.find((special) => whole.startsWith(special, end));
    if (stop) end += stop.length;
    ranges.push([start, end]);
  });

  // Characters → bytes → tokens: a token is the message's when all its bytes are inside the message's range.
  const byteOf = (char: number) => Buffer.byteLength(whole.slice(0, char), 'utf8');
  const byteRanges = ranges.map(([start, end]) => [byteOf(start), byteOf(end)] as const);
  const given = new Array<number>(tokens.length).fill(0);
  let at = 0;
  let r = 0;
  for (let i = 0; i < tokens.length; i++) {
    const next = at + pieceOf(tokenizer.table, tokens[i]).length;
    while (r < byteRanges.length && byteRanges[r][1] <= at) r++;
    if (r < byteRanges.length && byteRanges[r][0] <= at && next <= byteRanges[r][1] && next > at) given[i] = 1;
    at = next;
  }
  return {
    rollout: { kind: 'tokens', id: rollout.id, tokens, promptLength: -1, options: rollout.options, given: { field: 'messages', values: given, start: 0, shift: 0 } },
    diagnostics,
    source: whole,
  };
}
