/**
 * Chat messages (`{"messages": [...], "tools"?: [...]}`, OpenAI / Hugging Face form) rendered through the
 * tokenizer's own chat template (tokenizer_config.json, apply_chat_template semantics).
 *
 * The mask is then known twice: rebuilt by the grammar from the rendered stream, and from which message
 * produced each token. An assistant message owns the text that changes when the model's part of it (content,
 * reasoning_content, tool_calls) is replaced by a mark: the two renderings differ in one region per message,
 * which is what the model wrote; the special token right after it (`<|im_end|>`, `<|eot_id|>`) is the stop
 * token the model sampled, even after an empty message. Rendering prefixes does not work for every template:
 * Qwen3's writes an empty `<think></think>` into whichever assistant turn is last, so a prefix is not a prefix
 * of the whole.
 *
 * Cost is linear in turns: the conversation is rendered once as it is (and encoded once) and once with every
 * assistant message marked, and the two are walked side by side, each region ending where the text after its
 * mark resumes. Only where that walk cannot place a message (a template that renders a message twice, or not at
 * all, or model text that repeats the template's own) is that message found the exact way, by rendering the
 * conversation with it alone marked. Where the region does not hold the message's content (a template that
 * rewrites it), `message-not-attributed` says so.
 *
 * A reasoning block the model opened is the model's: when a region holds `</think>` and the text the template
 * wrote just before it is `<think>` (plus newlines), the region starts at `<think>`, unless the template's own
 * generation prompt ends with `<think>` (then the template opened it, as DeepSeek-R1's does).
 */
import type { Diagnostic } from '../diagnostics.ts';
import type { ChatMessage, LoadedTokenizer } from '../tokenizer/load.ts';
import type { MessagesRollout, TokenRollout } from './shapes.ts';
import { diagnostic, specialTexts } from './text.ts';
import { isUnproven, provable, RenderProof } from './chat-proof.ts';

export interface PreparedMessages {
  rollout: TokenRollout;
  diagnostics: Diagnostic[];
  source: string;
}

const THINK_OPEN = '<think>';
const THINK_CLOSE = '</think>';
/** Template text between the walk's anchors is searched for by its first characters (at most this many). */
const ANCHOR = 64;

const PRIVATE_USE = /[\ue000-\uf8ff]/;

/** Does any string in `value` (or any key) hold a private-use character? */
function holdsPrivateUse(value: unknown, depth = 0): boolean {
  if (typeof value === 'string') return PRIVATE_USE.test(value);
  if (value === null || typeof value !== 'object') return false;
  // Deeper than any real message: the exact search below decides.
  if (depth > 64) return true;
  if (Array.isArray(value)) {
    for (const item of value) if (holdsPrivateUse(item, depth + 1)) return true;
    return false;
  }
  for (const key in value) if (PRIVATE_USE.test(key) || holdsPrivateUse((value as Record<string, unknown>)[key], depth + 1)) return true;
  return false;
}

/**
 * Three private-use characters that occur nowhere in the conversation (so nothing but a mark can match them):
 * the mark, and the two a single rendering wraps contents in (chat-proof.ts).
 */
function marksFor(rollout: MessagesRollout): [string, string, string] {
  // Nearly always none is used, and the first will do: found without writing the conversation out as JSON.
  if (!holdsPrivateUse(rollout.messages) && !holdsPrivateUse(rollout.tools ?? null)) return ['\ue000', '\ue001', '\ue002'];
  const text = JSON.stringify([rollout.messages, rollout.tools ?? null]);
  const marks: string[] = [];
  for (let code = 0xe000; code <= 0xf8ff && marks.length < 3; code++) {
    const mark = String.fromCharCode(code);
    if (!text.includes(mark)) marks.push(mark);
  }
  if (marks.length < 3) throw new Error('the conversation holds nearly every private-use character (U+E000 to U+F8FF): too few are left to mark its messages');
  return marks as [string, string, string];
}

/**
 * Per tokenizer and template: how often one rendering was proven, and how often it was not (a template that
 * never allows it is then rendered twice straight away: the attempt would only add to the cost).
 */
const proofRecord = new WeakMap<LoadedTokenizer, Map<string, { proven: number; unproven: number }>>();

/** How many conversations this tokenizer rendered once (proven) and how many it tried to and could not (for the bench). */
export function renderingsProven(tokenizer: LoadedTokenizer): { proven: number; unproven: number } {
  let proven = 0;
  let unproven = 0;
  for (const record of proofRecord.get(tokenizer)?.values() ?? []) { proven += record.proven; unproven += record.unproven; }
  return { proven, unproven };
}

function proofWorthTrying(record: { proven: number; unproven: number }): boolean {
  return record.unproven < 8 || record.proven * 4 >= record.unproven;
}

/** `whole` and `marked` from one rendering where chat-proof.ts proves them the two renderings' texts, else undefined. */
function renderedOnce(tokenizer: LoadedTokenizer, messages: ChatMessage[], options: Record<string, unknown>, marks: [string, string, string]): { whole: string; marked: string } | undefined {
  if (!provable(messages)) return undefined;
  let records = proofRecord.get(tokenizer);
  if (!records) proofRecord.set(tokenizer, (records = new Map()));
  const key = typeof options.chatTemplate === 'string' ? options.chatTemplate : '';
  let record = records.get(key);
  if (!record) records.set(key, (record = { proven: 0, unproven: 0 }));
  if (!proofWorthTrying(record)) return undefined;
  const [mark, open, close] = marks;
  const proof = new RenderProof(open, close);
  let texts: { whole: string; marked: string } | undefined;
  try {
    const rendered = tokenizer.renderChatTemplate(proof.wrap(messages), options, proof);
    texts = proof.texts(rendered, messages.filter((message) => message.role === 'assistant').map((message) => message.content as string), mark);
  } catch (error) {
    // Unproven, or any failure: the two renderings below give the template's own error, if it has one.
    if (!isUnproven(error) && !(error instanceof Error)) throw error;
  }
  if (texts) record.proven++;
  else record.unproven++;
  return texts;
}

/** Per tokenizer and template options: does the generation prompt open a reasoning block itself? */
const promptOpensThink = new WeakMap<LoadedTokenizer, Map<string, boolean>>();

function generationPromptOpensThink(tokenizer: LoadedTokenizer, options: Record<string, unknown>): boolean {
  let known = promptOpensThink.get(tokenizer);
  if (!known) promptOpensThink.set(tokenizer, (known = new Map()));
  const key = JSON.stringify(options);
  let opens = known.get(key);
  if (opens === undefined) {
    const user = [{ role: 'user', content: 'x' }];
    try {
      const asked = tokenizer.renderChatTemplate(user, { ...options, addGenerationPrompt: true });
      opens = asked.trimEnd().endsWith(THINK_OPEN);
    } catch {
      opens = false;
    }
    known.set(key, opens);
  }
  return opens;
}

/** What a message's region must hold: its content, or for content with a reasoning block, what follows the block. */
function visibleContent(message: ChatMessage): string {
  if (typeof message.content !== 'string') return '';
  const content = message.content;
  const close = content.lastIndexOf(THINK_CLOSE);
  return (close >= 0 ? content.slice(close + THINK_CLOSE.length) : content).trim();
}

/**
 * The region of `whole` each assistant message owns, walking `whole` and `marked` (every assistant message's
 * model part replaced by `mark`) side by side. undefined for a message the walk cannot place.
 */
function walkRegions(whole: string, marked: string, mark: string, assistants: ChatMessage[]): Array<[number, number] | undefined> {
  const segments = marked.split(mark);
  const regions: Array<[number, number] | undefined> = new Array(assistants.length).fill(undefined);
  if (segments.length !== assistants.length + 1) return regions;
  // w: where `whole` resumes with the template text that follows the previous mark (segments[i]).
  let w = 0;
  for (let i = 0; i < assistants.length; i++) {
    const before = segments[i];
    // The common part: whole and the template text before this mark, until they part.
    let v = 0;
    // Nearly always all of it (compared at once); else character by character to where they part.
    if (whole.startsWith(before, w)) { w += before.length; v = before.length; }
    while (v < before.length && w < whole.length && whole.charCodeAt(w) === before.charCodeAt(v)) { w++; v++; }
    const start = w;
    // The region ends where the text after the mark resumes: its first characters, as close as they occur
    // after the start while the region holds the message's content. The last mark's text runs to the end.
    const after = segments[i + 1];
    let end = -1;
    if (i + 1 === assistants.length) {
      if (whole.length - start >= after.length && whole.endsWith(after)) end = whole.length - after.length;
    } else {
      const anchor = after.slice(0, Math.min(ANCHOR, after.length));
      const content = visibleContent(assistants[i]);
      if (anchor.length > 0) {
        // The first place of the anchor with the content inside [start, at): the content's first place from start, if it ends by then.
        const held = content ? whole.indexOf(content, start) : start;
        for (let at = whole.indexOf(anchor, start); at >= 0 && held >= 0; at = whole.indexOf(anchor, at + 1)) {
          if (held + content.length <= at) { end = at; break; }
        }
      }
    }
    if (end < start) return regions.map((region, k) => (k < i ? region : undefined));
    regions[i] = [start, end];
    w = end;
  }
  return regions;
}

/** Template variables every rollout gets (`--set` does not reach templates; a line may bring `template_args`). */
export function prepareMessages(tokenizer: LoadedTokenizer, rollout: MessagesRollout, templateArgs: Record<string, unknown> = {}): PreparedMessages {
  const messages = rollout.messages as ChatMessage[];
  const options = { ...templateArgs, tools: rollout.tools ?? null };
  const marks = marksFor(rollout);
  const once = renderedOnce(tokenizer, messages, options, marks);
  const whole = once ? once.whole : tokenizer.renderChatTemplate(messages, options);
  const tokens = tokenizer.encode(whole);
  const specials = specialTexts(tokenizer.table);
  const diagnostics: Diagnostic[] = [];

  // Every assistant message marked at once; the walk places each region.
  const mark = marks[0];
  const assistantAt: number[] = [];
  messages.forEach((message, k) => { if (message.role === 'assistant') assistantAt.push(k); });
  const assistants = assistantAt.map((k) => messages[k]);
  const marked = once ? once.marked : assistants.length ? tokenizer.renderChatTemplate(messages.map((message) => (message.role === 'assistant' ? { role: 'assistant', content: mark } : message)), options) : whole;
  const walked = walkRegions(whole, marked, mark, assistants);

  // Action character ranges in `whole`, from the assistant messages.
  const ranges: Array<[number, number]> = [];
  assistantAt.forEach((k, i) => {
    const message = messages[k];
    let region = walked[i];
    if (!region) {
      // The exact way, for this message alone: its own mark, the renderings' common prefix and suffix.
      const without = tokenizer.renderChatTemplate(messages.map((other, j) => (j === k ? { role: 'assistant', content: mark } : other)), options);
      if (without === whole) {
        diagnostics.push(diagnostic('message-not-attributed', 0, { name: `messages[${k}]`, detail: 'the template renders it the same whatever it holds' }));
        return;
      }
      let start = 0;
      while (start < whole.length && start < without.length && whole[start] === without[start]) start++;
      let tail = 0;
      while (tail < whole.length - start && tail < without.length - start && whole[whole.length - 1 - tail] === without[without.length - 1 - tail]) tail++;
      region = [start, whole.length - tail];
    }
    let [start, end] = region;
    const content = visibleContent(message);
    if (content && !whole.slice(start, end).includes(content)) {
      diagnostics.push(diagnostic('message-not-attributed', 0, { name: `messages[${k}]`, detail: 'the text that changes with it does not hold its content' }));
      return;
    }
    // A reasoning block the model opened: the region starts at its `<think>`.
    if (whole.slice(start, end).includes(THINK_CLOSE)) {
      let open = start;
      while (open > 0 && (whole[open - 1] === '\n' || whole[open - 1] === ' ')) open--;
      if (whole.startsWith(THINK_OPEN, open - THINK_OPEN.length) && !generationPromptOpensThink(tokenizer, options)) start = open - THINK_OPEN.length;
    }
    // The model's stop token follows what it wrote.
    const stop = specials.find((special) => whole.startsWith(special, end));
    if (stop) end += stop.length;
    if (end > start) ranges.push([start, end]);
  });

  // Characters → bytes → tokens: a token is the message's when all its bytes are inside the message's range.
  // Byte offsets are counted once, left to right (ranges are in order).
  const byteRanges: Array<readonly [number, number]> = [];
  let char = 0;
  let byte = 0;
  const byteOf = (to: number) => { if (to < char) { char = 0; byte = 0; } byte += Buffer.byteLength(whole.slice(char, to), 'utf8'); char = to; return byte; };
  for (const [start, end] of ranges) byteRanges.push([byteOf(start), byteOf(end)]);
  const given = new Array<number>(tokens.length).fill(0);
  const offsets = tokenizer.table.offsets;
  let at = 0;
  let r = 0;
  for (let i = 0; i < tokens.length; i++) {
    // The piece's length (its bytes need not be looked at).
    const next = at + offsets[tokens[i] + 1] - offsets[tokens[i]];
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
