/**
 * The xstate machine a grammar means: the single definition of the protocol (who may write next, which
 * kind a span has, which diagnostics a step raises). compile.ts enumerates it into tables.
 */
import type { Grammar } from './schema.ts';
import { MAX_NESTING } from './check.ts';
import type { TransitionCode } from '../diagnostics.ts';

export type { TransitionCode };

/** The xstate machine config a grammar means. Plain data, so it can be printed, tested and visualised. */
export function machineConfig(grammar: Grammar) {
  const tagNames = Object.keys(grammar.tags);
  const report = (code: TransitionCode) => ({ type: 'report', params: { code } });
  const handoverAfterTag = new Map<string, number>();
  grammar.handovers.forEach((handover, index) => { if (handover.after_tag) handoverAfterTag.set(handover.after_tag, index); });

  // A handover literal is heard in every kind of the turn: Search-R1 cuts after the first </search>,
  // even one written inside <think>. A tag whose close is such a literal has no separate close event.
  const modelOn: Record<string, unknown> = {};
  const handoverLiterals = new Set<string>();
  grammar.handovers.forEach((handover, index) => {
    if (handover.after === undefined) return;
    modelOn[`HANDOVER:${index}`] = `#grammar.handover-${index}`;
    handoverLiterals.add(handover.after);
  });
  for (const [name, reply] of Object.entries(grammar.replies)) {
    if (reply.interrupts) modelOn[`INTERRUPT:${name}`] = `#grammar.reply-${name}`;
  }
  // A template header is never the model's: heard anywhere in a model turn, it is observation, and the
  // model's turn begins again after it (a verl/SkyRL prompt that ends before the generation prompt).
  grammar.headers.forEach((_, index) => { modelOn[`HEADER:${index}`] = `#grammar.header-${index}`; });

  // Kinds nest where a tag `contains` another: `function_calls>invoke>parameter` is a state of its own, so
  // closing the inner tag returns to the outer kind. Any other tag opened inside a closable one replaces it
  // (a `nested-tag` note); markers without a close just follow one another.
  const stacks: string[][] = [['text']];
  const grow = (stack: string[]) => {
    stacks.push(stack);
    if (stack.length >= MAX_NESTING) return;
    for (const inner of grammar.tags[stack[stack.length - 1]].contains) if (!stack.includes(inner)) grow([...stack, inner]);
  };
  for (const tag of tagNames) grow([tag]);
  const stateName = (stack: string[]) => stack.join('>');
  // Targets name kinds by id, never by path: a tag's name may hold a `.`, which xstate would read as a path.
  const idOf = new Map(stacks.map((stack, index) => [stateName(stack), `kind-${index}`]));
  const target = (stack: string[]) => `#${idOf.get(stateName(stack))}`;
  const lookalike = (tag: string) => (grammar.tags[tag].lookalike ? [report('observation-tag-in-action')] : []);

  // Opening a tag is declared once, on the parent of the kinds it leaves, not in every kind: `outside` holds
  // plain text and the markers without a close, `inside` the kinds of a tag that must still close, where
  // another tag's opening is a `nested-tag` note. (400 tags declared in every kind were 160,000 transitions
  // and a second of createMachine.) A kind's own `contains` is declared on the kind, and the deepest
  // declaration wins, as xstate picks transitions.
  const opens = (nested: boolean) => Object.fromEntries(tagNames.map((tag) => [
    `OPEN:${tag}`, { target: target([tag]), actions: [...(nested ? [report('nested-tag')] : []), ...lookalike(tag)] },
  ]));
  const outside: Record<string, unknown> = {};
  const inside: Record<string, unknown> = {};
  for (const stack of stacks) {
    const kind = stack[stack.length - 1];
    const own = kind === 'text' ? undefined : grammar.tags[kind];
    const on: Record<string, unknown> = {};
    for (const inner of own?.contains ?? []) {
      if (idOf.has(stateName([...stack, inner]))) on[`OPEN:${inner}`] = { target: target([...stack, inner]), actions: lookalike(inner) };
    }
    if (own?.close.some((literal) => !handoverLiterals.has(literal))) {
      const handover = handoverAfterTag.get(kind);
      on[`CLOSE:${kind}`] = handover !== undefined ? `#grammar.handover-${handover}` : target(stack.length > 1 ? stack.slice(0, -1) : ['text']);
    }
    (own?.close.length ? inside : outside)[stateName(stack)] = { id: idOf.get(stateName(stack)), meta: { kind }, on };
  }
  const kindStates: Record<string, unknown> = { outside: { initial: 'text', on: opens(false), states: outside } };
  if (Object.keys(inside).length) kindStates.inside = { initial: Object.keys(inside)[0], on: opens(true), states: inside };

  // END: the stream's closing padding begins; wherever the protocol stands, the rest is trailing.
  modelOn.END = 'done';
  const states: Record<string, unknown> = {
    prompt: { tags: ['prompt'], meta: { kind: 'prompt' }, on: { PROMPT_END: 'model', END: 'done' } },
    model: { tags: ['action'], initial: 'outside', on: modelOn, states: kindStates },
    done: { tags: ['trailing'], meta: { kind: 'trailing' }, type: 'final' },
  };
  grammar.handovers.forEach((handover, index) => {
    const on: Record<string, unknown> = {};
    for (const reply of handover.replies) on[`REPLY:${reply}`] = `reply-${reply}`;
    on.END = 'done';
    // The template's header after the handover (two assistant messages in a row, an SFT conversation).
    // Not where the model samples that same header itself (model_continues is tried first).
    grammar.headers.forEach((literal, at) => { if (!handover.model_continues.includes(literal)) on[`HEADER:${at}`] = `header-${at}`; });
    // The model samples the next header itself and goes on (gpt-oss: <|end|><|start|>assistant…).
    if (handover.model_continues.length) on.MODEL_CONTINUES = 'model';
    // Text after a handover that no allowed reply explains: the model's own, unless the handover was the
    // model's stop token, after which it never writes.
    on.CONTINUE = { target: handover.model_stops ? 'done' : 'model', actions: [report(handover.ends_episode && !handover.model_stops ? 'text-after-end' : 'missing-reply')] };
    states[`handover-${index}`] = { meta: { handover: index }, on };
  });
  for (const [name, reply] of Object.entries(grammar.replies)) {
    const on: Record<string, unknown> = { REPLY_END: 'model', END: 'done' };
    // The reply's own opening inside it: an earlier reply was cut (its close is missing) and swallowed a turn.
    if (reply.open !== undefined && reply.close !== undefined && !reply.reopens) on.REOPEN = { actions: [report('reply-in-reply')] };
    states[`reply-${name}`] = { tags: ['observation'], meta: { kind: name, reply: name }, on };
  }
  grammar.headers.forEach((_, index) => {
    states[`header-${index}`] = { tags: ['observation'], meta: { kind: 'header', header: index }, on: { REPLY_END: 'model', END: 'done' } };
  });
  return { id: 'grammar', initial: 'prompt', states };
}
