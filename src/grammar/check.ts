/**
 * Meaning checks: a grammar whose shape is right can still not say what its author meant.
 * Each issue names the JSON path it is about; the loader adds file:line:column.
 */
import { joinPath } from './json.ts';
import type { Grammar } from './schema.ts';

export type Severity = 'error' | 'warning' | 'info';

export interface GrammarIssue {
  code: GrammarIssueCode;
  severity: Severity;
  path: string;
  message: string;
}

export type GrammarIssueCode =
  | 'grammar-shape'
  | 'unknown-tag'
  | 'unknown-reply'
  | 'unknown-option'
  | 'duplicate-handover'
  | 'reply-shape'
  | 'unreachable-reply'
  | 'unreachable-state'
  | 'literal-overlap'
  | 'no-prompt-end';

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

const show = (literal: string) => JSON.stringify(literal);

export function checkGrammar(grammar: Grammar): GrammarIssue[] {
  const issues: GrammarIssue[] = [];
  const add = (code: GrammarIssueCode, severity: Severity, path: string, message: string) => issues.push({ code, severity, path, message });

  for (const [name, tag] of Object.entries(grammar.tags)) {
    tag.contains.forEach((inner, index) => {
      if (!(inner in grammar.tags)) add('unknown-tag', 'error', `${joinPath('tags', name)}.contains[${index}]`, `no tag named ${show(inner)}`);
    });
  }

  const referenced = new Set<string>();
  const handoverTags = new Set<string>();
  const handoverLiterals = new Set<string>();
  grammar.handovers.forEach((handover, index) => {
    const path = `handovers[${index}]`;
    if (handover.after_tag !== undefined) {
      const tag = grammar.tags[handover.after_tag];
      if (!tag) add('unknown-tag', 'error', `${path}.after_tag`, `no tag named ${show(handover.after_tag)} (tags: ${Object.keys(grammar.tags).join(', ') || 'none'})`);
      else if (!tag.close.length) add('unknown-tag', 'error', `${path}.after_tag`, `tag ${show(handover.after_tag)} has no "close", so nothing marks the handover`);
      if (handoverTags.has(handover.after_tag)) add('duplicate-handover', 'error', `${path}.after_tag`, `a handover after ${show(handover.after_tag)} is already declared`);
      handoverTags.add(handover.after_tag);
    }
    if (handover.after !== undefined) {
      if (handoverLiterals.has(handover.after)) add('duplicate-handover', 'error', `${path}.after`, `a handover after ${show(handover.after)} is already declared`);
      handoverLiterals.add(handover.after);
    }
    handover.replies.forEach((reply, replyIndex) => {
      referenced.add(reply);
      if (!(reply in grammar.replies)) add('unknown-reply', 'error', `${path}.replies[${replyIndex}]`, `no reply named ${show(reply)} (replies: ${Object.keys(grammar.replies).join(', ') || 'none'})`);
    });
  });

  for (const [name, reply] of Object.entries(grammar.replies)) {
    const path = `${joinPath('replies', name)}`;
    const envelope = reply.open !== undefined || reply.close !== undefined || reply.ends_before !== undefined;
    if (reply.text !== undefined && envelope) add('reply-shape', 'error', path, 'a reply is either a fixed "text" or an envelope ("open" … "close"/"ends_before"), not both');
    if (reply.text === undefined && !envelope) add('reply-shape', 'error', path, 'a reply needs "text", or "open" with "close" or "ends_before"');
    if (envelope && reply.open === undefined) add('reply-shape', 'error', path, 'an envelope needs "open": replies are recognised by how they start');
    if (envelope && reply.open !== undefined && (reply.close === undefined) === (reply.ends_before === undefined)) {
      add('reply-shape', 'error', path, 'an envelope needs exactly one of "close" (its own last bytes) and "ends_before" (the model\'s next marker)');
    }
    if (reply.close_then_optional.length && reply.close === undefined) add('reply-shape', 'error', `${path}.close_then_optional`, 'only an envelope with "close" can have optional text after it');
    if (reply.repeats && (reply.open === undefined || reply.close === undefined)) add('reply-shape', 'error', `${path}.repeats`, 'only an envelope with "open" and "close" can repeat: its open is looked for right after its close');
    if (reply.interrupts && reply.text === undefined) add('reply-shape', 'error', `${path}.interrupts`, 'only a fixed "text" can interrupt a turn: an envelope is found only after a handover');
    if (!reply.interrupts && !referenced.has(name)) add('unreachable-reply', 'warning', path, `no handover lists ${show(name)} and it does not interrupt, so it can never be recognised`);
    if (typeof reply.max_tokens === 'string' && !(reply.max_tokens.slice(1) in grammar.options)) {
      add('unknown-option', 'error', `${path}.max_tokens`, `no option named ${show(reply.max_tokens.slice(1))} (options: ${Object.keys(grammar.options).join(', ')})`);
    }
    if (reply.ends_before !== undefined && !modelLiterals(grammar).some((item) => item.literal === reply.ends_before)) {
      add('reply-shape', 'error', `${path}.ends_before`, `${show(reply.ends_before)} must be a tag or marker the model writes, since the reply ends where the model starts it`);
    }
  }

  const optionUses: Array<[string | undefined, string]> = [[grammar.prompt.optional_when, 'prompt.optional_when'],
    ...grammar.prompt.then_optional_when.map((option, index): [string | undefined, string] => [option, `prompt.then_optional[${index}]`]),
    ...Object.entries(grammar.replies).flatMap(([name, reply]): Array<[string | undefined, string]> => [
      [reply.optional_when, `${joinPath('replies', name)}.optional_when`],
      ...reply.close_then_optional_when.map((option, index): [string | undefined, string] => [option, `${joinPath('replies', name)}.close_then_optional[${index}]`]),
    ])];
  for (const [option, path] of optionUses) {
    if (option !== undefined && !(option in grammar.options)) add('unknown-option', 'error', path, `no option named ${show(option)} (options: ${Object.keys(grammar.options).join(', ')})`);
  }

  // One literal inside another makes the shorter one fire first and hide the longer: reject it.
  const literals = modelLiterals(grammar);
  for (const a of literals) {
    for (const b of literals) {
      if (a === b) continue;
      if (a.literal === b.literal) {
        if (a.path < b.path) add('literal-overlap', 'error', b.path, `${show(b.literal)} is also ${a.path}: each literal may mean one thing`);
      } else if (a.literal.includes(b.literal)) {
        add('literal-overlap', 'error', a.path, `${show(a.literal)} contains ${b.path} ${show(b.literal)}, which would be found first`);
      }
    }
  }
  const prompts = grammar.prompt.ends_after.map((literal, index) => ({ literal, path: `prompt.ends_after[${index}]` }));
  for (const a of prompts) for (const b of prompts) {
    if (a !== b && a.literal.includes(b.literal)) add('literal-overlap', 'error', a.path, `${show(a.literal)} contains ${b.path} ${show(b.literal)}`);
  }
  grammar.handovers.forEach((handover, index) => {
    handover.model_continues.forEach((literal, at) => {
      const clash = Object.values(grammar.replies).find((reply) => {
        const start = reply.open ?? reply.text;
        return start !== undefined && (start.startsWith(literal) || literal.startsWith(start));
      });
      if (clash) add('literal-overlap', 'error', `handovers[${index}].model_continues[${at}]`, `${show(literal)} and a reply's start (${show(clash.open ?? clash.text!)}) begin alike: after the handover one could not tell who writes`);
    });
  });
  if (grammar.prompt.ends_after.length === 0) {
    add('no-prompt-end', 'warning', 'prompt.ends_after', 'no prompt end is declared: every rollout must bring "prompt_length"');
  }
  return issues;
}
