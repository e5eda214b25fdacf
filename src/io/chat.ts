/**
 * Chat messages (`{"messages": [...], "tools"?: [...]}`, OpenAI / Hugging Face form) rendered through the
 * tokenizer's own chat template (tokenizer_config.json, apply_chat_template semantics).
 *
 * The mask is then known twice: rebuilt by the grammar from the rendered stream, and from which message
 * produced each token. The second is found by rendering prefixes: an assistant message k owns the text between
 * `render(messages[:k], add_generation_prompt=True)` and `render(messages[:k+1])`, both prefixes of the whole
 * rendering. The header the generation prompt adds is the template's, not the model's; so is whitespace the
 * template writes after the message's last special token (Qwen's `\n` after `<|im_end|>`): the model stops at
 * the special token. Where a template renders a prefix differently from the whole (one that drops earlier
 * reasoning), that message cannot be attributed and `template-not-prefix` says so.
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

/** Template variables every rollout gets (`--set` does not reach templates; a line may bring `template_args`). */
export function prepareMessages(tokenizer: LoadedTokenizer, rollout: MessagesRollout, templateArgs: Record<string, unknown> = {}): PreparedMessages {
  const messages = rollout.messages as ChatMessage[];
  const render = (count: number, addGenerationPrompt: boolean) =>
    tokenizer.applyChatTemplate(messages.slice(0, count), { ...templateArgs, tools: rollout.tools ?? null, addGenerationPrompt }).text;
  const whole = render(messages.length, false);
  const tokens = tokenizer.encode(whole);
  const specials = specialTexts(tokenizer.table).sort((a, b) => b.length - a.length);
  const diagnostics: Diagnostic[] = [];

  // Action character ranges in `whole`, from the assistant messages.
  const ranges: Array<[number, number]> = [];
  messages.forEach((message, k) => {
    if (message.role !== 'assistant') return;
    const before = render(k, true);
    const upto = render(k + 1, false);
    if (!upto.startsWith(before) || !whole.startsWith(upto)) {
      diagnostics.push(diagnostic('template-not-prefix', 0, {
        name: `messages[${k}]`,
        detail: !upto.startsWith(before) ? 'the generation prompt is not a prefix of the rendered message' : 'later messages change how it is rendered',
      }));
      return;
    }
    let end = upto.length;
    // The template's whitespace after the message's last special token is not the model's.
    const tail = upto.slice(before.length);
    for (const special of specials) {
      const at = tail.lastIndexOf(special);
      if (at >= 0 && /^\s*$/.test(tail.slice(at + special.length))) { end = before.length + at + special.length; break; }
    }
    if (end > before.length) ranges.push([before.length, end]);
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
