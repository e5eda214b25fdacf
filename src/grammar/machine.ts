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
  const names = new Set(stacks.map(stateName));

  const kindStates: Record<string, unknown> = {};
  for (const stack of stacks) {
    const kind = stack[stack.length - 1];
    const own = kind === 'text' ? undefined : grammar.tags[kind];
    const on: Record<string, unknown> = {};
    for (const tag of tagNames) {
      const actions = [];
      const nested = own && own.contains.includes(tag) && names.has(stateName([...stack, tag]));
      if (own && own.close.length && !nested) actions.push(report('nested-tag'));
      if (grammar.tags[tag].lookalike) actions.push(report('observation-tag-in-action'));
      on[`OPEN:${tag}`] = { target: nested ? stateName([...stack, tag]) : tag, actions };
    }
    if (own?.close.some((literal) => !handoverLiterals.has(literal))) {
      const handover = handoverAfterTag.get(kind);
      on[`CLOSE:${kind}`] = handover !== undefined ? `#grammar.handover-${handover}` : stack.length > 1 ? stateName(stack.slice(0, -1)) : 'text';
    }
    kindStates[stateName(stack)] = { meta: { kind }, on };
  }

  // END: the stream's closing padding begins; wherever the protocol stands, the rest is trailing.
  modelOn.END = 'done';
  const states: Record<string, unknown> = {
    prompt: { tags: ['prompt'], meta: { kind: 'prompt' }, on: { PROMPT_END: 'model', END: 'done' } },
    model: { tags: ['action'], initial: 'text', on: modelOn, states: kindStates },
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
