/**
 * Meaning checks: a grammar whose shape is right can still not say what its author meant.
 * Each issue names the JSON path it is about; the loader adds file:line:column.
 */
import { joinPath } from './json.ts';
import { interruptTrigger } from './automata.ts';
import type { Grammar, OptionalRule } from './schema.ts';
import { messageOf, severityOf, type DiagnosticArgs, type GrammarIssueCode, type Severity } from '../diagnostics.ts';

const utf8 = new TextEncoder();
const decoder = new TextDecoder();

export type { GrammarIssueCode, Severity };

export interface GrammarIssue {
  code: GrammarIssueCode;
  severity: Severity;
  /** The JSON path the issue is about (`replies.obs.close`); '' for the whole grammar. */
  path: string;
  args: DiagnosticArgs;
  /** The registry's words for code and args. */
  message: string;
}

/** An issue record: severity and words come from the registry (src/diagnostics.ts). */
export function grammarIssue(code: GrammarIssueCode, path: string, args: DiagnosticArgs = {}): GrammarIssue {
  return { code, severity: severityOf(code), path, args, message: messageOf(code, args) };
}

/**
 * Every literal a grammar declares, with its path: the scanner's byte view must know them all (scan/bind.ts),
 * and their number and size bound what checking and compiling cost.
 */
export function declaredLiterals(grammar: Grammar): Array<{ literal: string; path: string }> {
  const out: Array<{ literal: string; path: string }> = [];
  const each = (base: string, list: string[]) => list.forEach((literal, index) => out.push({ literal, path: `${base}[${index}]` }));
  each('prompt.ends_after', grammar.prompt.ends_after);
  each('prompt.then_optional', grammar.prompt.then_optional);
  const followers = (base: string, rules: OptionalRule[]) => rules.forEach((rule, index) => {
    if (rule.followed_by !== undefined) out.push({ literal: rule.followed_by, path: `${base}[${index}].followed_by` });
  });
  followers('prompt.then_optional', grammar.prompt.then_optional_rules);
  // Tags, handovers and headers.
  out.push(...modelLiterals(grammar));
  grammar.handovers.forEach((handover, index) => each(`handovers[${index}].model_continues`, handover.model_continues));
  for (const [name, reply] of Object.entries(grammar.replies)) {
    const path = joinPath('replies', name);
    for (const key of ['open', 'close', 'ends_before', 'text'] as const) {
      const literal = reply[key];
      if (literal !== undefined) out.push({ literal, path: `${path}.${key}` });
    }
    each(`${path}.close_then_optional`, reply.close_then_optional);
    followers(`${path}.close_then_optional`, reply.close_then_optional_rules);
  }
  return out;
}

/**
 * Literals a grammar may declare, and their bytes in all. The overlap check compares literals pairwise, and
 * each byte of a literal is a 1 KB row of a scanning table (twice: as written, and in a tokenizer's bytes):
 * 400 tags are 800 literals of about 5 KB; a 1 MB literal once took 8 s and 2.3 GB.
 */
export const MAX_LITERALS = 2048;
export const MAX_LITERAL_BYTES = 65_536;

/**
 * Every literal the model's turn is scanned for, with the path that declares it. A tag close that is
 * also a handover literal is one literal with one meaning (the handover), so it is listed once.
 */
export function modelLiterals(grammar: Grammar): Array<{ literal: string; path: string }> {
  const literals: Array<{ literal: string; path: string }> = [];
  const handoverLiterals = new Set(grammar.handovers.map((handover) => handover.after));
  const at = (base: string, list: string[], index: number) => (list.length === 1 ? base : `${base}[${index}]`);
  for (const [name, tag] of Object.entries(grammar.tags)) {
    tag.open.forEach((literal, index) => literals.push({ literal, path: at(`${joinPath('tags', name)}.open`, tag.open, index) }));
    tag.close.forEach((literal, index) => {
      if (!handoverLiterals.has(literal)) literals.push({ literal, path: at(`${joinPath('tags', name)}.close`, tag.close, index) });
    });
  }
  grammar.handovers.forEach((handover, index) => {
    if (handover.after !== undefined) literals.push({ literal: handover.after, path: `handovers[${index}].after` });
  });
  // A template header is heard anywhere in a model turn (it is never the model's), so it competes with the rest.
  grammar.headers.forEach((literal, index) => literals.push({ literal, path: `headers[${index}]` }));
  return literals;
}

/**
 * Automata a grammar may need: the model's kinds share one, the prompt and each reply with a close have
 * their own. Each costs a vocabulary-sized skip table per tokenizer (~150 KB), so memory stays bounded.
 */
export const MAX_AUTOMATA = 256;
/** Kinds nest at most this deep (`a>b>c>d`); see machine.ts. */
export const MAX_NESTING = 4;
/**
 * Model-turn states (one per nesting of kinds) a grammar may have. Each is enumerated with xstate for every
 * event at compile time (~0.1 ms a pair), so 12 tags that all contain each other (13,344 states) would
 * take minutes: refused instead, with the path that makes them.
 */
export const MAX_KIND_STATES = 512;

/** How many nestings of kinds `contains` makes (`text`, each tag, `a>b`, …), counting up to just past `limit`. */
export function countKindStates(grammar: Grammar, limit: number): number {
  let count = 1;
  const grow = (stack: string[]) => {
    count++;
    if (count > limit || stack.length >= MAX_NESTING) return;
    const last = stack[stack.length - 1];
    const tag = Object.hasOwn(grammar.tags, last) ? grammar.tags[last] : undefined;
    for (const inner of tag?.contains ?? []) if (Object.hasOwn(grammar.tags, inner) && !stack.includes(inner) && count <= limit) grow([...stack, inner]);
  };
  for (const name of Object.keys(grammar.tags)) if (count <= limit) grow([name]);
  return count;
}

/** How a check pass reports: the issue's code, its JSON path and the arguments of its message. */
type Report = (code: GrammarIssueCode, path: string, args?: DiagnosticArgs) => void;

/**
 * What the grammar means, beyond its shape (schema.ts): names that refer to nothing, replies that cannot be
 * reached, literals that hide one another, options that do not exist, sizes past what the scanner holds. One
 * named pass per concern, in this order (the issues come out in it); the size comes first and stops the rest,
 * which compare literals pairwise.
 */
export function checkGrammar(grammar: Grammar): GrammarIssue[] {
  const issues: GrammarIssue[] = [];
  const report: Report = (code, path, args = {}) => { issues.push(grammarIssue(code, path, args)); };
  if (checkSize(grammar, report)) return issues;
  checkContains(grammar, report);
  const referenced = checkHandovers(grammar, report);
  checkReplies(grammar, referenced, report);
  checkOptionReferences(grammar, report);
  checkLiteralOverlaps(grammar, report);
  checkInterrupts(grammar, report);
  checkModelContinues(grammar, report);
  if (grammar.prompt.ends_after.length === 0) report('no-prompt-end-declared', 'prompt.ends_after');
  checkNesting(grammar, report);
  return issues;
}

/** Size first: what follows compares literals pairwise, and compiling builds tables from their bytes. True when too large. */
function checkSize(grammar: Grammar, report: Report): boolean {
  let bytes = 0;
  for (const [index, item] of declaredLiterals(grammar).entries()) {
    bytes += utf8.encode(item.literal).length;
    if (index >= MAX_LITERALS || bytes > MAX_LITERAL_BYTES) {
      const detail = index >= MAX_LITERALS ? `more than ${MAX_LITERALS} literals` : `more than ${MAX_LITERAL_BYTES} bytes of literals`;
      report('grammar-too-large', item.path, { detail, budget: index >= MAX_LITERALS ? MAX_LITERALS : MAX_LITERAL_BYTES });
      return true;
    }
  }
  return false;
}

/** A tag's `contains` names tags. */
function checkContains(grammar: Grammar, report: Report): void {
  for (const [name, tag] of Object.entries(grammar.tags)) {
    tag.contains.forEach((inner, index) => {
      if (!Object.hasOwn(grammar.tags, inner)) report('unknown-tag', `${joinPath('tags', name)}.contains[${index}]`, { name: inner });
    });
  }
}

/**
 * Each handover follows a tag that closes or a literal, no two the same, and names replies that exist (opening
 * with its overlap, when it has one). Returns the replies some handover names.
 */
function checkHandovers(grammar: Grammar, report: Report): Set<string> {
  const tags = Object.keys(grammar.tags);
  const referenced = new Set<string>();
  const handoverTags = new Set<string>();
  const handoverLiterals = new Set<string>();
  grammar.handovers.forEach((handover, index) => {
    const path = `handovers[${index}]`;
    if (handover.after_tag !== undefined) {
      const tag = Object.hasOwn(grammar.tags, handover.after_tag) ? grammar.tags[handover.after_tag] : undefined;
      if (!tag) report('unknown-tag', `${path}.after_tag`, { name: handover.after_tag, known: tags });
      else if (!tag.close.length) report('tag-without-close', `${path}.after_tag`, { name: handover.after_tag });
      if (handoverTags.has(handover.after_tag)) report('duplicate-handover', `${path}.after_tag`, { name: handover.after_tag });
      handoverTags.add(handover.after_tag);
    }
    if (handover.after !== undefined) {
      if (handoverLiterals.has(handover.after)) report('duplicate-handover', `${path}.after`, { name: handover.after });
      handoverLiterals.add(handover.after);
    }
    handover.replies.forEach((reply, replyIndex) => {
      referenced.add(reply);
      if (!Object.hasOwn(grammar.replies, reply)) report('unknown-reply', `${path}.replies[${replyIndex}]`, { name: reply, known: Object.keys(grammar.replies) });
      else if (handover.overlap !== undefined && !grammar.replies[reply].open?.startsWith(handover.overlap)) report('reply-shape', `${path}.replies[${replyIndex}]`, { rule: 'open-without-overlap' });
    });
  });
  return referenced;
}

/** Each reply is a fixed text or an envelope that can end, is reached (by a handover or as an interrupt), and its own literals differ. */
function checkReplies(grammar: Grammar, referenced: Set<string>, report: Report): void {
  const options = Object.keys(grammar.options);
  for (const [name, reply] of Object.entries(grammar.replies)) {
    const path = `${joinPath('replies', name)}`;
    const envelope = reply.open !== undefined || reply.close !== undefined || reply.ends_before !== undefined;
    if (reply.text !== undefined && envelope) report('reply-shape', path, { rule: 'text-and-envelope' });
    if (reply.text === undefined && !envelope) report('reply-shape', path, { rule: 'neither' });
    if (envelope && reply.open === undefined) report('reply-shape', path, { rule: 'envelope-without-open' });
    if (envelope && reply.open !== undefined && (reply.close === undefined) === (reply.ends_before === undefined)) {
      report('reply-shape', path, { rule: 'close-or-ends-before' });
    }
    if (reply.close_then_optional.length && reply.close === undefined) report('reply-shape', `${path}.close_then_optional`, { rule: 'optional-without-close' });
    if (reply.repeats && (reply.open === undefined || reply.close === undefined)) report('reply-shape', `${path}.repeats`, { rule: 'repeats-without-envelope' });
    if (reply.reopens && (reply.open === undefined || reply.close === undefined)) report('reply-shape', `${path}.reopens`, { rule: 'reopens-without-envelope' });
    if (reply.interrupts && reply.text === undefined) report('reply-shape', `${path}.interrupts`, { rule: 'interrupt-not-text' });
    if (!reply.interrupts && !referenced.has(name)) report('unreachable-reply', path, { name });
    // Inside an envelope both its close and (unless it reopens) its own open are heard, so they too must differ.
    if (reply.open !== undefined && reply.close !== undefined && !reply.reopens) {
      if (reply.close === reply.open) report('literal-overlap', `${path}.close`, { rule: 'same', literal: reply.close, otherPath: `${path}.open` });
      else if (reply.close.includes(reply.open)) report('literal-overlap', `${path}.close`, { rule: 'contains', literal: reply.close, otherPath: `${path}.open`, other: reply.open });
      else if (reply.open.includes(reply.close)) report('literal-overlap', `${path}.open`, { rule: 'contains', literal: reply.open, otherPath: `${path}.close`, other: reply.close });
    }
    if (typeof reply.max_tokens === 'string' && !Object.hasOwn(grammar.options, reply.max_tokens)) {
      report('unknown-option', `${path}.max_tokens`, { name: reply.max_tokens, known: options });
    }
    if (reply.ends_before !== undefined && !modelLiterals(grammar).some((item) => item.literal === reply.ends_before)) {
      report('reply-shape', `${path}.ends_before`, { rule: 'ends-before-not-model', literal: reply.ends_before });
    }
  }
}

/** Every option a literal is switched by (`optional_when`, `when`, `unless`, `overlap_when`) is declared. */
function checkOptionReferences(grammar: Grammar, report: Report): void {
  const options = Object.keys(grammar.options);
  const uses: Array<[string | undefined, string]> = [[grammar.prompt.optional_when, 'prompt.optional_when'],
    ...grammar.handovers.map((handover, index): [string | undefined, string] => [handover.overlap_when, `handovers[${index}].overlap_when`]),
    ...grammar.prompt.then_optional_when.map((option, index): [string | undefined, string] => [option, `prompt.then_optional[${index}]`]),
    ...grammar.prompt.then_optional_rules.map((rule, index): [string | undefined, string] => [rule.unless, `prompt.then_optional[${index}].unless`]),
    ...Object.entries(grammar.replies).flatMap(([name, reply]): Array<[string | undefined, string]> => [
      [reply.optional_when, `${joinPath('replies', name)}.optional_when`],
      ...reply.close_then_optional_when.map((option, index): [string | undefined, string] => [option, `${joinPath('replies', name)}.close_then_optional[${index}]`]),
      ...reply.close_then_optional_rules.map((rule, index): [string | undefined, string] => [rule.unless, `${joinPath('replies', name)}.close_then_optional[${index}].unless`]),
    ])];
  for (const [option, path] of uses) {
    if (option !== undefined && !Object.hasOwn(grammar.options, option)) report('unknown-option', path, { name: option, known: options });
  }
}

/** One literal inside another makes the shorter one fire first and hide the longer: the model's, and the prompt's ends. */
function checkLiteralOverlaps(grammar: Grammar, report: Report): void {
  const literals = modelLiterals(grammar);
  for (const a of literals) {
    for (const b of literals) {
      if (a === b) continue;
      if (a.literal === b.literal) {
        if (a.path < b.path) report('literal-overlap', b.path, { rule: 'same', literal: b.literal, otherPath: a.path });
      } else if (a.literal.includes(b.literal)) {
        report('literal-overlap', a.path, { rule: 'contains', literal: a.literal, otherPath: b.path, other: b.literal });
      }
    }
  }
  const prompts = grammar.prompt.ends_after.map((literal, index) => ({ literal, path: `prompt.ends_after[${index}]` }));
  for (const a of prompts) for (const b of prompts) {
    if (a !== b && a.literal.includes(b.literal)) report('literal-overlap', a.path, { rule: 'contains', literal: a.literal, otherPath: b.path, other: b.literal });
  }
}

/**
 * Interrupting texts are found inside a model turn by a piece of each (automata.ts interruptTrigger): two whose
 * pieces are the same, or one inside the other, could not be told apart, nor one whose piece is a model literal's.
 */
function checkInterrupts(grammar: Grammar, report: Report): void {
  const literals = modelLiterals(grammar);
  const modelBytes = literals.map((item) => utf8.encode(item.literal));
  const triggers = Object.entries(grammar.replies).filter(([, reply]) => reply.interrupts && reply.text !== undefined).map(([name, reply]) => ({
    path: `${joinPath('replies', name)}.text`, text: reply.text!, trigger: decoder.decode(interruptTrigger(utf8.encode(reply.text!), modelBytes).trigger),
  }));
  for (const a of triggers) {
    const clash = literals.find((item) => item.literal.includes(a.trigger) || a.trigger.includes(item.literal));
    if (clash) report('literal-overlap', a.path, { rule: 'interrupt-overlaps', literal: a.text, otherPath: clash.path, other: clash.literal, detail: a.trigger });
  }
  triggers.forEach((a, i) => triggers.slice(0, i).forEach((b) => {
    if (a.trigger.includes(b.trigger) || b.trigger.includes(a.trigger)) {
      report('literal-overlap', a.path, { rule: 'interrupts-alike', literal: a.text, otherPath: b.path, other: b.text, detail: a.trigger.length <= b.trigger.length ? a.trigger : b.trigger });
    }
  }));
}

/** A header the model samples to go on (`model_continues`) must not begin like a reply: after a handover either could start. */
function checkModelContinues(grammar: Grammar, report: Report): void {
  grammar.handovers.forEach((handover, index) => {
    handover.model_continues.forEach((literal, at) => {
      const clash = Object.values(grammar.replies).find((reply) => {
        const start = reply.open ?? reply.text;
        return start !== undefined && (start.startsWith(literal) || literal.startsWith(start));
      });
      if (clash) report('literal-overlap', `handovers[${index}].model_continues[${at}]`, { rule: 'begins-alike', literal, other: clash.open ?? clash.text! });
    });
  });
}

/** The kinds `contains` nests stay within what the machine may hold. */
function checkNesting(grammar: Grammar, report: Report): void {
  if (countKindStates(grammar, MAX_KIND_STATES) <= MAX_KIND_STATES) return;
  const nesting = Object.entries(grammar.tags).find(([, tag]) => tag.contains.length > 0);
  report('too-many-states', nesting ? `${joinPath('tags', nesting[0])}.contains` : 'tags', { detail: `more than ${MAX_KIND_STATES} kind states`, budget: MAX_KIND_STATES });
}
