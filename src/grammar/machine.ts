/**
 * The xstate machine a grammar means: the single definition of the protocol (who may write next, which
 * kind a span has, which diagnostics a step raises). compile.ts enumerates it into tables.
 */
import type { AnyEventObject, AnyStateNodeConfig, MachineConfig, MachineContext } from 'xstate';
import type { Grammar } from './schema.ts';
import { MAX_NESTING } from './check.ts';
import type { TransitionCode } from '../diagnostics.ts';

export type { TransitionCode };

export type EventFamily =
  | 'PROMPT_END' | 'REPLY_END' | 'END' | 'CONTINUE' | 'REOPEN' | 'MODEL_CONTINUES'
  | 'HEADER' | 'OPEN' | 'CLOSE' | 'HANDOVER' | 'INTERRUPT' | 'REPLY';

/**
 * One event of the machine. Families that exist once per header, tag, handover or reply carry which one:
 * `index` into `grammar.headers`, the tag names, `grammar.handovers` or the reply names (in declaration
 * order), and `name` for tags and replies. Readers use these fields, never the `type` string: the type is
 * built from the family and the index only, so no name the schema accepts can change how it reads
 * (`ns:call` holds the separator; in xstate a type ending in `.*` is a wildcard).
 */
export interface MachineEvent { type: string; family: EventFamily; index: number; name?: string }

const typeOf = (family: EventFamily, index = -1) => (index < 0 ? family : `${family}:${index}`);
const event = (family: EventFamily, index = -1, name?: string): MachineEvent => ({ type: typeOf(family, index), family, index, ...(name === undefined ? {} : { name }) });

/** Every event the machine of `grammar` can take, in the order of the compiled tables' columns. */
export function machineEvents(grammar: Grammar): MachineEvent[] {
  const events = (['PROMPT_END', 'REPLY_END', 'END', 'CONTINUE', 'REOPEN', 'MODEL_CONTINUES'] as const).map((family) => event(family));
  grammar.headers.forEach((_, index) => events.push(event('HEADER', index)));
  Object.keys(grammar.tags).forEach((tag, index) => events.push(event('OPEN', index, tag), event('CLOSE', index, tag)));
  grammar.handovers.forEach((handover, index) => { if (handover.after !== undefined) events.push(event('HANDOVER', index)); });
  Object.keys(grammar.replies).forEach((reply, index) => events.push(event('INTERRUPT', index, reply), event('REPLY', index, reply)));
  return events;
}

/** A state's config and its `on`, as xstate types them (events are typed by string, so any event may be named). */
type StateConfig = AnyStateNodeConfig;
type Transitions = NonNullable<StateConfig['on']>;

/** The xstate machine config a grammar means. Plain data, so it can be printed, tested and visualised. */
export function machineConfig(grammar: Grammar): MachineConfig<MachineContext, AnyEventObject> {
  const tagNames = Object.keys(grammar.tags);
  const tagIndex = new Map(tagNames.map((tag, index) => [tag, index]));
  const replyIndex = new Map(Object.keys(grammar.replies).map((reply, index) => [reply, index]));
  const OPEN = (tag: string) => typeOf('OPEN', tagIndex.get(tag)!);
  // A reply's state is keyed by its index: xstate reads a `.` in a target as a path (its name is in meta).
  const replyState = (reply: string) => `reply-${replyIndex.get(reply)!}`;
  const report = (code: TransitionCode) => ({ type: 'report', params: { code } });
  const handoverAfterTag = new Map<string, number>();
  grammar.handovers.forEach((handover, index) => { if (handover.after_tag) handoverAfterTag.set(handover.after_tag, index); });

  // A handover literal is heard in every kind of the turn: Search-R1 cuts after the first </search>,
  // even one written inside <think>. A tag whose close is such a literal has no separate close event.
  const modelOn: Transitions = {};
  const handoverLiterals = new Set<string>();
  grammar.handovers.forEach((handover, index) => {
    if (handover.after === undefined) return;
    modelOn[typeOf('HANDOVER', index)] = `#grammar.handover-${index}`;
    handoverLiterals.add(handover.after);
  });
  for (const [name, reply] of Object.entries(grammar.replies)) {
    if (reply.interrupts) modelOn[typeOf('INTERRUPT', replyIndex.get(name)!)] = `#grammar.${replyState(name)}`;
  }
  // A template header is never the model's: heard anywhere in a model turn, it is observation, and the
  // model's turn begins again after it (a verl/SkyRL prompt that ends before the generation prompt).
  grammar.headers.forEach((_, index) => { modelOn[typeOf('HEADER', index)] = `#grammar.header-${index}`; });

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
    OPEN(tag), { target: target([tag]), actions: [...(nested ? [report('nested-tag')] : []), ...lookalike(tag)] },
  ]));
  const outside: Record<string, StateConfig> = {};
  const inside: Record<string, StateConfig> = {};
  for (const stack of stacks) {
    const kind = stack[stack.length - 1];
    const own = kind === 'text' ? undefined : grammar.tags[kind];
    const on: Transitions = {};
    for (const inner of own?.contains ?? []) {
      if (idOf.has(stateName([...stack, inner]))) on[OPEN(inner)] = { target: target([...stack, inner]), actions: lookalike(inner) };
    }
    if (own?.close.some((literal) => !handoverLiterals.has(literal))) {
      const handover = handoverAfterTag.get(kind);
      on[typeOf('CLOSE', tagIndex.get(kind)!)] = handover !== undefined ? `#grammar.handover-${handover}` : target(stack.length > 1 ? stack.slice(0, -1) : ['text']);
    }
    (own?.close.length ? inside : outside)[stateName(stack)] = { id: idOf.get(stateName(stack)), meta: { kind }, on };
  }
  const kindStates: Record<string, StateConfig> = { outside: { initial: 'text', on: opens(false), states: outside } };
  if (Object.keys(inside).length) kindStates.inside = { initial: Object.keys(inside)[0], on: opens(true), states: inside };

  // END: the stream's closing padding begins; wherever the protocol stands, the rest is trailing.
  modelOn.END = 'done';
  const states: Record<string, StateConfig> = {
    prompt: { tags: ['prompt'], meta: { kind: 'prompt' }, on: { PROMPT_END: 'model', END: 'done' } },
    model: { tags: ['action'], initial: 'outside', on: modelOn, states: kindStates },
    done: { tags: ['trailing'], meta: { kind: 'trailing' }, type: 'final' },
  };
  grammar.handovers.forEach((handover, index) => {
    const on: Transitions = {};
    for (const reply of handover.replies) on[typeOf('REPLY', replyIndex.get(reply)!)] = replyState(reply);
    on.END = 'done';
    // The template's header after the handover (two assistant messages in a row, an SFT conversation).
    // Not where the model samples that same header itself (model_continues is tried first).
    grammar.headers.forEach((literal, at) => { if (!handover.model_continues.includes(literal)) on[typeOf('HEADER', at)] = `header-${at}`; });
    // The model samples the next header itself and goes on (gpt-oss: <|end|><|start|>assistant…).
    if (handover.model_continues.length) on.MODEL_CONTINUES = 'model';
    // Text after a handover that no allowed reply explains: the model's own, unless the handover was the
    // model's stop token, after which it never writes.
    on.CONTINUE = { target: handover.model_stops ? 'done' : 'model', actions: [report(handover.ends_episode && !handover.model_stops ? 'text-after-end' : 'missing-reply')] };
    states[`handover-${index}`] = { meta: { handover: index }, on };
  });
  for (const [name, reply] of Object.entries(grammar.replies)) {
    const on: Transitions = { REPLY_END: 'model', END: 'done' };
    // The reply's own opening inside it: an earlier reply was cut (its close is missing) and swallowed a turn.
    if (reply.open !== undefined && reply.close !== undefined && !reply.reopens) on.REOPEN = { actions: [report('reply-in-reply')] };
    states[replyState(name)] = { tags: ['observation'], meta: { kind: name, reply: name }, on };
  }
  grammar.headers.forEach((_, index) => {
    states[`header-${index}`] = { tags: ['observation'], meta: { kind: 'header', header: index }, on: { REPLY_END: 'model', END: 'done' } };
  });
  return { id: 'grammar', initial: 'prompt', states };
}
