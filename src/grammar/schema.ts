/**
 * What a grammar file may say (shape only; meaning is checked in check.ts).
 * See README "Grammar format" for every field with examples.
 */

import { joinPath } from './json.ts';
import { isObject } from '../io/json.ts';

export interface Grammar {
  name: string;
  description?: string;
  sources?: string[];
  options: Record<string, OptionSpec>;
  prompt: PromptSpec;
  tags: Record<string, TagSpec>;
  handovers: HandoverSpec[];
  replies: Record<string, ReplySpec>;
  padding: string[];
  /** Padding texts the model samples to stop: the first of a closing run is the model's (mask 1). */
  stop: string[];
  /**
   * Role headers the chat template writes before a model turn (`<|start_header_id|>assistant<|end_header_id|>\n\n`):
   * never the model's, wherever they stand: heard anywhere in a model turn (also as its first bytes, when a
   * `prompt_length` ends before the header) and after any handover (after whitespace only). `prompt.then_optional`
   * is read after them too. A handover's `model_continues` makes the one right after it the model's.
   */
  headers: string[];
}

export interface OptionSpec { default: number | null; description?: string; values?: Array<number | null> }

export interface PromptSpec {
  /** The prompt ends after the first of these; a `prompt_length` given with the rollout wins. */
  ends_after: string[];
  /** Text the chat template may append after that header (an inserted empty think block): prompt too. */
  then_optional: string[];
  /** The option (`"$name"` in the file) under which `then_optional` applies: only while it is 1 (does the template insert it?). */
  optional_when?: string;
  /** Per `then_optional` literal, the option that switches it (`{"text", "when"}` items, else `optional_when`). */
  then_optional_when: Array<string | undefined>;
  /** Per `then_optional` literal, what else must hold for it to be the template's (`unless`, `ends_token`, `followed_by`). */
  then_optional_rules: OptionalRule[];
}

/**
 * What else must hold for an optional literal to be the template's text. `unless`: the option that switches it
 * off (1 = off). `ends_token`: its last byte ends a token: the template encoded it on its own, so where it ends
 * inside a token (`<think>\n` inside the `\n\n` of `<think>\n\n</think>`) the bytes were encoded with more text.
 * `followed_by`: it counts only where this text follows it (read, not taken: the text stays whoever's it is).
 */
export interface OptionalRule { unless?: string; ends_token: boolean; followed_by?: string }

export interface TagSpec {
  /** Literals that open this kind; several are alternatives (verifiers' XMLParser `("tool", "answer")`). */
  open: string[];
  /** Literals that close it (empty: the kind lasts until the next tag, as ReAct's `Thought:`). */
  close: string[];
  /** The model writing this tag deserves a look (e.g. it wrote the environment's `<information>`). */
  lookalike: boolean;
  /** The open literal counts only at the start of a line (or of the model's turn): ReAct markers. */
  line_start: boolean;
  /** The open literal is a tag name prefix (`<invoke`); the tag runs to `>` and its attributes are read. */
  attributes: boolean;
  /** Tags that may open inside this one without a `nested-tag` note (`<invoke>` inside `<function_calls>`). */
  contains: string[];
}

export interface HandoverSpec {
  /** The turn passes to the environment after this literal, wherever in the turn the model writes it
   * (Search-R1 cuts after the first `</search>`, even inside `<think>`); it may be a tag's close … */
  after?: string;
  /** … or after this tag's close, heard only inside that tag (ReAct's line end after `Action Input:`). */
  after_tag?: string;
  /** The replies the environment may give here, tried in order. */
  replies: string[];
  /** With no reply here, the episode is over (text that still follows is reported). */
  ends_episode: boolean;
  /** The handover literal is the model's stop token (`<|im_end|>`): it never writes after it, so text that
   * follows without a reply the protocol allows is not the model's (trailing, mask `after_end`). */
  model_stops: boolean;
  /** Headers the model samples itself right after this literal to go on with its turn (gpt-oss writes
   * `<|start|>assistant` after `<|end|>`): action, no diagnostic. Tried before the replies. */
  model_continues: string[];
  /**
   * The stop string's last part that is also the next reply's opening (`User:` of `\n\nUser:`, all of GLM's
   * `<|user|>`): the model samples it to stop, and the template writes it as the next turn's header. Each listed
   * reply's `open` begins with it; the replies are looked for from its first byte. It stays the model's (action)
   * unless `overlap_when`'s option is 1 and a reply follows: then it is that reply's (a conversation rendered
   * whole, where only the last turn's stop string was sampled, as tinker-cookbook's `stop_overlap` trains it).
   */
  overlap?: string;
  /** The option under which the overlap is the following reply's. */
  overlap_when?: string;
}

export interface ReplySpec {
  open?: string;
  close?: string;
  /** The reply ends where this literal starts; the literal is the model's (ReAct's `Thought:`). */
  ends_before?: string;
  close_then_optional: string[];
  /** The option (`"$name"` in the file) under which `close_then_optional` applies: only while it is 1. */
  optional_when?: string;
  /** Per `close_then_optional` literal, the option that switches it (`{"text", "when"}` items, else `optional_when`). */
  close_then_optional_when: Array<string | undefined>;
  /** Per `close_then_optional` literal, what else must hold (see OptionalRule). */
  close_then_optional_rules: OptionalRule[];
  /** After its close, the reply's own `open` may follow at once: the reply goes on (DeepSeek V3.1 tool outputs). */
  repeats: boolean;
  /** Its own `open` may stand inside it (several messages in one observation: two tool results, a tool result
   * then a user turn), so that is no sign of a cut reply (no `reply-in-reply`). */
  reopens: boolean;
  /** A fixed message instead of an envelope. */
  text?: string;
  /** Recognised anywhere in a model turn, not only after a handover (the model's turn end is invisible). */
  interrupts: boolean;
  /** Token budget: a number, or the name of the option holding it (`"$name"` in the file). The environment cut the reply after this many tokens. */
  max_tokens?: number | string;
}

/**
 * The option a `"$name"` reference names, or undefined when `value` is no reference. The one place a grammar's
 * `$` is read: every field of a read Grammar holds bare option names (`optional_when`, `when`, `unless`,
 * `overlap_when`, `max_tokens`), so check.ts and compile.ts never strip it again.
 */
export function optionReference(value: unknown): string | undefined {
  return typeof value === 'string' ? /^\$(\w+)$/.exec(value)?.[1] : undefined;
}

export interface ShapeIssue { path: string; message: string }

/** Largest token budget: budgets are held in Int32Array (a larger number would wrap, 2^32 + 1 acting as 1). */
export const MAX_BUDGET = 2 ** 31 - 1;

/**
 * Why `value` is not a value of this option (undefined when it is): one of its `values`, else null or an
 * integer from 1 to MAX_BUDGET. The one rule for grammar defaults, `--set` and a line's own `options`.
 */
export function optionValueProblem(spec: Pick<OptionSpec, 'values'>, value: unknown): string | undefined {
  if (spec.values) return spec.values.includes(value as number | null) ? undefined : `expected ${spec.values.map((item) => JSON.stringify(item)).join(' or ')}, got ${JSON.stringify(value)}`;
  if (value === null || (typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= MAX_BUDGET)) return undefined;
  return `expected null or an integer from 1 to ${MAX_BUDGET}, got ${JSON.stringify(value)}`;
}

/** Built-in options every grammar has; a grammar may change their defaults. */
export const BUILTIN_OPTIONS: Record<string, OptionSpec> = {
  straddle: {
    default: 0,
    values: [0, 1],
    description: 'Mask value of a token that crosses an action/observation boundary (0: never train on a token the model did not sample whole).',
  },
  after_end: {
    default: 0,
    values: [0, 1],
    description: 'Mask value of the padding/end-of-sequence tokens that close the stream.',
  },
};

type Json = unknown;

/**
 * The checks every field shares, collecting issues instead of stopping at the first: a grammar author sees all
 * that is wrong in one run. Paths are JSON paths (`replies["web result"].close`); the loader turns them into
 * line:column.
 */
class FieldReader {
  readonly issues: ShapeIssue[] = [];

  issue(path: string, message: string): void { this.issues.push({ path, message }); }

  string(object: Record<string, Json>, key: string, path: string, required: boolean): string | undefined {
    const field = object[key];
    if (field === undefined) {
      if (required) this.issue(path, `missing "${key}"`);
      return undefined;
    }
    if (typeof field !== 'string') { this.issue(`${path}.${key}`.replace(/^\./, ''), 'expected a string'); return undefined; }
    if (field.length === 0) { this.issue(`${path}.${key}`.replace(/^\./, ''), 'must not be empty'); return undefined; }
    return field;
  }

  strings(object: Record<string, Json>, key: string, path: string): string[] {
    const field = object[key];
    const here = path ? `${path}.${key}` : key;
    if (field === undefined) return [];
    if (!Array.isArray(field)) { this.issue(here, 'expected an array of strings'); return []; }
    const out: string[] = [];
    field.forEach((item, index) => {
      if (typeof item !== 'string' || item.length === 0) this.issue(`${here}[${index}]`, 'expected a non-empty string');
      else out.push(item);
    });
    return out;
  }

  /** A literal (`"open": "<a>"`) or a list of alternatives (`"open": ["<a>", "<b>"]`). */
  literals(object: Record<string, Json>, key: string, path: string): string[] {
    if (typeof object[key] !== 'string') return this.strings(object, key, path);
    const literal = this.string(object, key, path, false);
    return literal === undefined ? [] : [literal];
  }

  flag(object: Record<string, Json>, key: string, path: string): boolean {
    if (object[key] !== undefined && typeof object[key] !== 'boolean') this.issue(`${path}.${key}`, 'expected true or false');
    return object[key] === true;
  }

  unknownKeys(object: Record<string, Json>, allowed: string[], path: string): void {
    for (const key of Object.keys(object)) {
      if (!allowed.includes(key)) this.issue(joinPath(path, key), `unknown field "${key}" (expected one of: ${allowed.join(', ')})`);
    }
  }

  /** A list's `optional_when`: the option that switches its plain-string literals. */
  optionalWhen(object: Record<string, Json>, path: string): string | undefined {
    const field = object.optional_when;
    if (field === undefined) return undefined;
    const option = optionReference(field);
    if (option === undefined) this.issue(`${path}.optional_when`, 'expected "$option"');
    return option;
  }

  /**
   * A list of optional literals: strings (switched by the list's `optional_when`) or
   * `{"text", "when"?: "$option", "unless"?: "$option", "ends_token"?: true, "followed_by"?: "text"}`.
   */
  optionalLiterals(object: Record<string, Json>, key: string, path: string, listWhen: string | undefined): { texts: string[]; when: Array<string | undefined>; rules: OptionalRule[] } {
    const field = object[key];
    const here = path ? `${path}.${key}` : key;
    const texts: string[] = [];
    const when: Array<string | undefined> = [];
    const rules: OptionalRule[] = [];
    if (field === undefined) return { texts, when, rules };
    if (!Array.isArray(field)) { this.issue(here, 'expected an array of literals or {"text", "when"} objects'); return { texts, when, rules }; }
    const isOption = (value: Json | undefined) => value === undefined || optionReference(value) !== undefined;
    field.forEach((item, index) => {
      if (typeof item === 'string' && item.length > 0) { texts.push(item); when.push(listWhen); rules.push({ ends_token: false }); return; }
      if (isObject(item)) {
        const at = `${here}[${index}]`;
        this.unknownKeys(item, ['text', 'when', 'unless', 'ends_token', 'followed_by'], at);
        const { text, when: condition, unless, ends_token: endsToken, followed_by: followedBy } = item;
        if (typeof text !== 'string' || text.length === 0) { this.issue(`${at}.text`, 'expected a non-empty string'); return; }
        if (!isOption(condition)) { this.issue(`${at}.when`, 'expected "$option"'); return; }
        if (!isOption(unless)) { this.issue(`${at}.unless`, 'expected "$option"'); return; }
        if (endsToken !== undefined && typeof endsToken !== 'boolean') { this.issue(`${at}.ends_token`, 'expected true or false'); return; }
        if (followedBy !== undefined && (typeof followedBy !== 'string' || followedBy.length === 0)) { this.issue(`${at}.followed_by`, 'expected a non-empty string'); return; }
        texts.push(text);
        when.push(condition === undefined ? listWhen : optionReference(condition));
        rules.push({ unless: optionReference(unless), ends_token: endsToken === true, followed_by: followedBy as string | undefined });
        return;
      }
      this.issue(`${here}[${index}]`, 'expected a non-empty string or {"text", "when": "$option"}');
    });
    return { texts, when, rules };
  }
}

const GRAMMAR_KEYS = ['$schema', 'name', 'description', 'sources', 'options', 'prompt', 'tags', 'handovers', 'replies', 'padding', 'stop', 'headers'];

/**
 * Validate the shape and fill defaults. Issues carry JSON paths; the loader turns them into line:column. One pass
 * per section, in the file's order, so issues come out in the order an author reads them.
 */
export function readGrammar(value: Json): { grammar?: Grammar; issues: ShapeIssue[] } {
  if (!isObject(value)) return { issues: [{ path: '', message: 'a grammar is a JSON object' }] };
  const read = new FieldReader();
  read.unknownKeys(value, GRAMMAR_KEYS, '');
  const name = read.string(value, 'name', '', true) ?? '';
  const description = typeof value.description === 'string' ? value.description : undefined;
  const sources = read.strings(value, 'sources', '');
  const options = readOptions(read, value.options);
  const prompt = readPrompt(read, value.prompt);
  const tags = readTags(read, value.tags);
  const handovers = readHandovers(read, value.handovers);
  const replies = readReplies(read, value.replies);
  const { headers, padding, stop } = readPadding(read, value);
  if (read.issues.length) return { issues: read.issues };
  return { grammar: { name, description, sources, options, prompt, tags, handovers, replies, padding, stop, headers }, issues: [] };
}

/**
 * The built-in options with the grammar's own on top. Records keyed by names the grammar chooses have no
 * prototype: `constructor` or `toString` is never found in them unless the grammar declares it.
 */
function readOptions(read: FieldReader, section: Json): Record<string, OptionSpec> {
  const options: Record<string, OptionSpec> = Object.create(null);
  for (const [key, spec] of Object.entries(BUILTIN_OPTIONS)) options[key] = { ...spec };
  if (section === undefined) return options;
  if (!isObject(section)) { read.issue('options', 'expected an object of options'); return options; }
  for (const [key, spec] of Object.entries(section)) {
    const path = joinPath('options', key);
    if (!isObject(spec)) { read.issue(path, 'expected {"default": …, "description": …}'); continue; }
    read.unknownKeys(spec, ['default', 'description', 'values'], path);
    if (!('default' in spec)) { read.issue(path, 'option has no default'); continue; }
    const fallback = spec.default;
    if (fallback !== null && typeof fallback !== 'number') { read.issue(`${path}.default`, 'expected a number or null'); continue; }
    const builtin = Object.hasOwn(BUILTIN_OPTIONS, key) ? BUILTIN_OPTIONS[key] : undefined;
    let values = builtin?.values;
    if (spec.values !== undefined) {
      if (!Array.isArray(spec.values) || spec.values.length === 0) { read.issue(`${path}.values`, 'expected a non-empty array of integers (or null)'); continue; }
      const bad = spec.values.findIndex((item) => item !== null && !(typeof item === 'number' && Number.isInteger(item) && item >= 0 && item <= MAX_BUDGET));
      if (bad >= 0) { read.issue(`${path}.values[${bad}]`, `expected an integer from 0 to ${MAX_BUDGET}, or null`); continue; }
      // straddle and after_end are written into the mask: anything but 0 and 1 would be a mask value of 7.
      const outside = builtin ? spec.values.findIndex((item) => !builtin.values!.includes(item)) : -1;
      if (outside >= 0) { read.issue(`${path}.values[${outside}]`, `${key} is a mask value: only ${JSON.stringify(builtin!.values)}`); continue; }
      values = spec.values as Array<number | null>;
    }
    const problem = optionValueProblem({ values }, fallback);
    if (problem) read.issue(`${path}.default`, problem);
    options[key] = { default: fallback, description: typeof spec.description === 'string' ? spec.description : options[key]?.description, values };
  }
  return options;
}

function readPrompt(read: FieldReader, section: Json): PromptSpec {
  if (!isObject(section)) {
    read.issue(section === undefined ? '' : 'prompt', section === undefined ? 'missing "prompt"' : 'expected an object');
    return { ends_after: [], then_optional: [], then_optional_when: [], then_optional_rules: [] };
  }
  read.unknownKeys(section, ['ends_after', 'then_optional', 'optional_when'], 'prompt');
  const listWhen = read.optionalWhen(section, 'prompt');
  const optional = read.optionalLiterals(section, 'then_optional', 'prompt', listWhen);
  return { ends_after: read.strings(section, 'ends_after', 'prompt'), then_optional: optional.texts, optional_when: listWhen, then_optional_when: optional.when, then_optional_rules: optional.rules };
}

function readTags(read: FieldReader, section: Json): Record<string, TagSpec> {
  const tags: Record<string, TagSpec> = Object.create(null);
  if (section !== undefined && !isObject(section)) { read.issue('tags', 'expected an object of tags'); return tags; }
  for (const [key, spec] of Object.entries((section ?? {}) as Record<string, Json>)) {
    const path = joinPath('tags', key);
    if (!isObject(spec)) { read.issue(path, 'expected {"open": …, "close"?: …}'); continue; }
    read.unknownKeys(spec, ['open', 'close', 'lookalike', 'line_start', 'attributes', 'contains'], path);
    if (spec.open === undefined) { read.issue(path, 'missing "open"'); continue; }
    const open = read.literals(spec, 'open', path);
    const close = read.literals(spec, 'close', path);
    if (!open.length) read.issue(`${path}.open`, 'expected a literal or a list of alternative literals');
    const lookalike = read.flag(spec, 'lookalike', path);
    const lineStart = read.flag(spec, 'line_start', path);
    const attributes = read.flag(spec, 'attributes', path);
    if (attributes && open.some((literal) => literal.endsWith('>'))) read.issue(`${path}.open`, 'a tag with "attributes" opens with its name only ("<invoke"), since attributes come before ">"');
    tags[key] = { open, close, lookalike, line_start: lineStart, attributes, contains: read.strings(spec, 'contains', path) };
  }
  return tags;
}

function readHandovers(read: FieldReader, section: Json): HandoverSpec[] {
  const handovers: HandoverSpec[] = [];
  if (section !== undefined && !Array.isArray(section)) { read.issue('handovers', 'expected an array'); return handovers; }
  ((section ?? []) as Json[]).forEach((spec, index) => {
    const path = `handovers[${index}]`;
    if (!isObject(spec)) { read.issue(path, 'expected {"after" | "after_tag", "replies", "ends_episode"?}'); return; }
    read.unknownKeys(spec, ['after', 'after_tag', 'replies', 'ends_episode', 'model_stops', 'model_continues', 'overlap', 'overlap_when'], path);
    const after = read.string(spec, 'after', path, false);
    const afterTag = read.string(spec, 'after_tag', path, false);
    if ((after === undefined) === (afterTag === undefined)) read.issue(path, 'give exactly one of "after" (a literal) and "after_tag" (a tag\'s close)');
    const endsEpisode = read.flag(spec, 'ends_episode', path);
    const modelStops = read.flag(spec, 'model_stops', path);
    const overlap = read.string(spec, 'overlap', path, false);
    if (overlap !== undefined && (after === undefined || !after.endsWith(overlap))) read.issue(`${path}.overlap`, 'expected the last part of "after" (the stop string\'s part that opens the next reply)');
    const overlapWhen = optionReference(spec.overlap_when);
    if (spec.overlap_when !== undefined && (overlapWhen === undefined || overlap === undefined)) read.issue(`${path}.overlap_when`, 'expected "$option", with "overlap"');
    handovers.push({
      after, after_tag: afterTag, replies: read.strings(spec, 'replies', path), ends_episode: endsEpisode, model_stops: modelStops,
      model_continues: read.strings(spec, 'model_continues', path),
      overlap, overlap_when: overlap !== undefined ? overlapWhen : undefined,
    });
  });
  return handovers;
}

function readReplies(read: FieldReader, section: Json): Record<string, ReplySpec> {
  const replies: Record<string, ReplySpec> = Object.create(null);
  if (section !== undefined && !isObject(section)) { read.issue('replies', 'expected an object of replies'); return replies; }
  for (const [key, spec] of Object.entries((section ?? {}) as Record<string, Json>)) {
    const path = joinPath('replies', key);
    if (!isObject(spec)) { read.issue(path, 'expected a reply object'); continue; }
    read.unknownKeys(spec, ['open', 'close', 'ends_before', 'close_then_optional', 'optional_when', 'text', 'interrupts', 'max_tokens', 'repeats', 'reopens'], path);
    const listWhen = read.optionalWhen(spec, path);
    const optional = read.optionalLiterals(spec, 'close_then_optional', path, listWhen);
    const reply: ReplySpec = {
      open: read.string(spec, 'open', path, false),
      close: read.string(spec, 'close', path, false),
      ends_before: read.string(spec, 'ends_before', path, false),
      close_then_optional: optional.texts,
      optional_when: listWhen,
      close_then_optional_when: optional.when,
      close_then_optional_rules: optional.rules,
      text: read.string(spec, 'text', path, false),
      interrupts: read.flag(spec, 'interrupts', path),
      repeats: read.flag(spec, 'repeats', path),
      reopens: read.flag(spec, 'reopens', path),
    };
    const budget = readBudget(read, spec.max_tokens, `${path}.max_tokens`);
    if (budget !== undefined) reply.max_tokens = budget;
    replies[key] = reply;
  }
  return replies;
}

/** A reply's `max_tokens`: a number of tokens, or the name of the option holding it. */
function readBudget(read: FieldReader, budget: Json, path: string): number | string | undefined {
  if (budget === undefined) return undefined;
  if (typeof budget === 'number' && Number.isInteger(budget) && budget > 0 && budget <= MAX_BUDGET) return budget;
  const option = optionReference(budget);
  if (option === undefined) read.issue(path, `expected an integer from 1 to ${MAX_BUDGET} or "$option"`);
  return option;
}

/** Headers, padding and the stop tokens among the padding. */
function readPadding(read: FieldReader, value: Record<string, Json>): { headers: string[]; padding: string[]; stop: string[] } {
  const headers = read.strings(value, 'headers', '');
  const padding = read.strings(value, 'padding', '');
  const stop = read.strings(value, 'stop', '');
  stop.forEach((text, index) => { if (!padding.includes(text)) read.issue(`stop[${index}]`, `${JSON.stringify(text)} must also be listed in "padding": a stop token is the first of the closing padding run`); });
  return { headers, padding, stop };
}
