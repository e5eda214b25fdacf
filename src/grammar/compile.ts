/**
 * Grammar → xstate machine → the tables the hot loop runs.
 *
 * The xstate machine is the single definition of the protocol: who may write next, which kind a span
 * has, which diagnostics a step raises. xstate costs ~3–16 µs per event (feasibility.md §5), so the
 * scanner never calls it: at compile time every reachable state is enumerated with xstate's own pure
 * `transition()`, and what each state can hear (`snapshot.can`) becomes a byte automaton for that state.
 */
import { createMachine, initialTransition, transition, type AnyMachineSnapshot, type AnyStateMachine } from 'xstate';
import { modelLiterals, type GrammarIssue } from './check.ts';
import type { Grammar } from './schema.ts';

export type Role = 'prompt' | 'action' | 'observation' | 'trailing';

/** Diagnostic codes a machine transition can raise. */
export type TransitionCode = 'nested-tag' | 'observation-tag-in-action' | 'missing-reply' | 'text-after-end' | 'reply-in-reply';

export interface StateInfo {
  key: string;
  /** Undefined for the instant handover states, which hold no bytes. */
  role?: Role;
  kind: string;
  /** Index into `dfas`, or -1 when the state does not scan. */
  dfa: number;
  handover: number;
  reply: number;
}

export interface EventInfo { type: string }

export interface Dfa {
  /**
   * `step[state * 256 + byte]`: the next state, or `~literal` when that byte completes a literal (the
   * scanner then starts again from the root, so an accepting state needs no row). One load per byte.
   */
  step: Int32Array;
  literals: DfaLiteral[];
  /** Bytes that leave the root: a token without any of them cannot start a match. */
  firstBytes: Uint8Array;
}

export interface DfaLiteral {
  bytes: Uint8Array;
  /** Bytes from where the literal's meaning starts to the end of the match (its length, or more for a trigger). */
  back: number;
  event: number;
  /** The literal starts the next state rather than ending this one (ReAct's reply ends before `Thought:`). */
  endsBefore: boolean;
  /** A trigger for this interrupting reply: verify its whole text from the trigger's start. */
  interrupt: number;
  /** Counts only at the start of a line or of the model's turn. */
  lineStart: boolean;
  /** Opens a tag: the tag's kind begins at the literal's first byte. */
  opens: boolean;
  /** A tag name prefix: the tag runs to `>`, its attributes are read. */
  attributes: boolean;
}

export interface ReplyInfo {
  name: string;
  open?: Uint8Array;
  text?: Uint8Array;
  closeOptional: Uint8Array[];
  /** The option that switches `closeOptional` on, if any. */
  optionalWhen?: string;
  /** A fixed budget, the name of the option that holds it, or none. */
  budget: number | string | undefined;
  event: number;
}

/** The replies a handover allows, tried in order (whether the episode may end there is the machine's). */
export interface HandoverInfo { replies: number[] }

export interface CompiledGrammar {
  grammar: Grammar;
  machine: AnyStateMachine;
  states: StateInfo[];
  events: EventInfo[];
  /** `next[state * events.length + event]`: the next state, or -1 when the state does not handle it. */
  next: Int32Array;
  /** Diagnostic codes raised by a transition, same indexing as `next`. */
  codes: Array<TransitionCode[] | undefined>;
  dfas: Dfa[];
  replies: ReplyInfo[];
  handovers: HandoverInfo[];
  initial: number;
  event: { promptEnd: number; replyEnd: number; end: number; continue: number };
  promptOptional: Uint8Array[];
  /** Problems only compilation can see (unreachable states). */
  issues: GrammarIssue[];
}

const utf8 = new TextEncoder();

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

  // Kinds nest where a tag `contains` another: `function_calls>invoke>parameter` is a state of its own, so
  // closing the inner tag returns to the outer kind. Any other tag opened inside a closable one replaces it
  // (a `nested-tag` note); markers without a close just follow one another.
  const MAX_DEPTH = 4;
  const stacks: string[][] = [['text']];
  const grow = (stack: string[]) => {
    stacks.push(stack);
    if (stack.length >= MAX_DEPTH) return;
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
    // Text after a handover that no allowed reply explains: the model's own, unless the handover was the
    // model's stop token, after which it never writes.
    on.CONTINUE = { target: handover.model_stops ? 'done' : 'model', actions: [report(handover.ends_episode && !handover.model_stops ? 'text-after-end' : 'missing-reply')] };
    states[`handover-${index}`] = { meta: { handover: index }, on };
  });
  for (const [name, reply] of Object.entries(grammar.replies)) {
    const on: Record<string, unknown> = { REPLY_END: 'model', END: 'done' };
    // The reply's own opening inside it: an earlier reply was cut (its close is missing) and swallowed a turn.
    if (reply.open !== undefined && reply.close !== undefined) on.REOPEN = { actions: [report('reply-in-reply')] };
    states[`reply-${name}`] = { tags: ['observation'], meta: { kind: name, reply: name }, on };
  }
  return { id: 'grammar', initial: 'prompt', states };
}

/**
 * What the scanner looks for to find an interrupting text: a piece of it that no other model literal
 * overlaps, starting at its first non-space character (a leading newline would send every token holding
 * one through the byte automaton). Returns the piece and how many bytes of the text precede its end.
 */
export function interruptTrigger(text: string, others: string[]): { trigger: string; bytesToEnd: number } {
  const start = Math.max(0, text.search(/\S/));
  let end = text.length;
  for (let at = start + 1; at < text.length; at++) {
    const rest = text.slice(at);
    if (others.some((literal) => rest.startsWith(literal) || literal.startsWith(rest))) { end = at; break; }
  }
  return { trigger: text.slice(start, end), bytesToEnd: utf8.encode(text.slice(0, end)).length };
}

interface StateMeta { kind?: string; handover?: number; reply?: string }

/** The meta of a snapshot's active state nodes, merged (the leaf's kind wins over its parent's). */
function metaOf(snapshot: AnyMachineSnapshot): StateMeta {
  return Object.values(snapshot.getMeta() as Record<string, StateMeta>).reduce((all, item) => ({ ...all, ...item }), {});
}

function buildDfa(literals: DfaLiteral[]): Dfa {
  // Aho–Corasick over bytes, made a full DFA. check.ts rejects one literal inside another, so each
  // accepting state accepts exactly its own literal.
  const goto: Array<Map<number, number>> = [new Map()];
  const accept: number[] = [-1];
  literals.forEach((literal, index) => {
    let state = 0;
    for (const byte of literal.bytes) {
      let next = goto[state].get(byte);
      if (next === undefined) {
        next = goto.length;
        goto.push(new Map());
        accept.push(-1);
        goto[state].set(byte, next);
      }
      state = next;
    }
    accept[state] = index;
  });
  const count = goto.length;
  const delta = new Int32Array(count * 256);
  const fail = new Int32Array(count);
  const queue: number[] = [];
  for (let byte = 0; byte < 256; byte++) {
    const next = goto[0].get(byte);
    if (next !== undefined) { delta[byte] = next; queue.push(next); }
  }
  while (queue.length) {
    const state = queue.shift()!;
    for (let byte = 0; byte < 256; byte++) {
      const next = goto[state].get(byte);
      if (next === undefined) delta[state * 256 + byte] = delta[fail[state] * 256 + byte];
      else {
        fail[next] = delta[fail[state] * 256 + byte];
        delta[state * 256 + byte] = next;
        queue.push(next);
      }
    }
  }
  const firstBytes = new Uint8Array(256);
  for (let byte = 0; byte < 256; byte++) firstBytes[byte] = delta[byte] !== 0 ? 1 : 0;
  const step = new Int32Array(count * 256);
  for (let at = 0; at < step.length; at++) {
    const target = delta[at];
    step[at] = accept[target] >= 0 ? ~accept[target] : target;
  }
  return { step, literals, firstBytes };
}

export function compileGrammar(grammar: Grammar): CompiledGrammar {
  const config = machineConfig(grammar);
  const machine = createMachine(config as never) as AnyStateMachine;

  const replyNames = Object.keys(grammar.replies);
  const eventTypes = ['PROMPT_END', 'REPLY_END', 'END', 'CONTINUE', 'REOPEN'];
  for (const tag of Object.keys(grammar.tags)) eventTypes.push(`OPEN:${tag}`, `CLOSE:${tag}`);
  grammar.handovers.forEach((handover, index) => { if (handover.after !== undefined) eventTypes.push(`HANDOVER:${index}`); });
  for (const reply of replyNames) eventTypes.push(`INTERRUPT:${reply}`, `REPLY:${reply}`);
  const eventIndex = new Map(eventTypes.map((type, index) => [type, index]));
  const E = eventTypes.length;

  // Enumerate reachable states with xstate itself.
  const [initialSnapshot] = initialTransition(machine);
  const snapshots: AnyMachineSnapshot[] = [];
  const index = new Map<string, number>();
  const keyOf = (snapshot: AnyMachineSnapshot) => JSON.stringify(snapshot.value);
  const visit = (snapshot: AnyMachineSnapshot) => {
    const key = keyOf(snapshot);
    let at = index.get(key);
    if (at === undefined) { at = snapshots.length; index.set(key, at); snapshots.push(snapshot); }
    return at;
  };
  visit(initialSnapshot);
  const edges: Array<Array<{ event: number; target: number; codes: TransitionCode[] }>> = [];
  for (let s = 0; s < snapshots.length; s++) {
    const list: Array<{ event: number; target: number; codes: TransitionCode[] }> = [];
    for (let e = 0; e < E; e++) {
      const event = { type: eventTypes[e] };
      if (!snapshots[s].can(event)) continue;
      const [nextSnapshot, actions] = transition(machine, snapshots[s], event);
      // Custom actions come back from the pure transition() as plain records: read, never executed.
      const codes = (actions as Array<{ type: string; params?: { code?: TransitionCode } }>)
        .filter((action) => action.type === 'report').map((action) => action.params!.code!);
      list.push({ event: e, target: visit(nextSnapshot), codes });
    }
    edges.push(list);
  }

  const S = snapshots.length;
  const next = new Int32Array(S * E).fill(-1);
  const codes: Array<TransitionCode[] | undefined> = new Array(S * E);
  edges.forEach((list, s) => {
    for (const edge of list) {
      next[s * E + edge.event] = edge.target;
      if (edge.codes.length) codes[s * E + edge.event] = edge.codes;
    }
  });

  const replies: ReplyInfo[] = replyNames.map((name) => {
    const reply = grammar.replies[name];
    return {
      name,
      open: reply.open === undefined ? undefined : utf8.encode(reply.open),
      text: reply.text === undefined ? undefined : utf8.encode(reply.text),
      closeOptional: reply.close_then_optional.map((literal) => utf8.encode(literal)),
      optionalWhen: reply.optional_when,
      budget: typeof reply.max_tokens === 'string' ? reply.max_tokens.slice(1) : reply.max_tokens,
      event: eventIndex.get(`REPLY:${name}`)!,
    };
  });
  const replyIndex = new Map(replyNames.map((name, at) => [name, at]));
  const handovers: HandoverInfo[] = grammar.handovers.map((handover) => ({
    replies: handover.replies.map((name) => replyIndex.get(name)!),
  }));

  const others = modelLiterals(grammar).map((item) => item.literal);
  const handoverLiterals = new Set(grammar.handovers.flatMap((handover) => (handover.after === undefined ? [] : [handover.after])));
  const literalsOf = (eventType: string, snapshot: AnyMachineSnapshot): Array<Omit<DfaLiteral, 'event'>> => {
    const [family, name] = eventType.split(':');
    const plain = (literal: string | undefined) => {
      if (literal === undefined) return [];
      const bytes = utf8.encode(literal);
      return [{ bytes, back: bytes.length, endsBefore: false, interrupt: -1, lineStart: false, attributes: false, opens: false }];
    };
    switch (family) {
      case 'PROMPT_END': return grammar.prompt.ends_after.flatMap((literal) => plain(literal));
      case 'OPEN': {
        const tag = grammar.tags[name];
        return tag.open.map((literal) => ({ ...plain(literal)[0], lineStart: tag.line_start, attributes: tag.attributes, opens: true }));
      }
      case 'CLOSE': return grammar.tags[name].close.filter((literal) => !handoverLiterals.has(literal)).flatMap((literal) => plain(literal));
      case 'HANDOVER': return plain(grammar.handovers[Number(name)].after);
      case 'INTERRUPT': {
        const text = grammar.replies[name].text!;
        const { trigger, bytesToEnd } = interruptTrigger(text, others);
        return [{ ...plain(trigger)[0], interrupt: replyIndex.get(name)!, back: bytesToEnd }];
      }
      case 'REOPEN': return plain(grammar.replies[metaOf(snapshot).reply ?? '']?.open);
      case 'REPLY_END': {
        const reply = grammar.replies[metaOf(snapshot).reply ?? ''];
        if (!reply || reply.text !== undefined) return [];
        if (reply.ends_before !== undefined) {
          // The literal is the model's: it keeps the line-start rule of the tag it opens.
          const lineStart = Object.values(grammar.tags).some((tag) => tag.line_start && tag.open.includes(reply.ends_before!));
          return [{ ...plain(reply.ends_before)[0], endsBefore: true, lineStart }];
        }
        return plain(reply.close);
      }
      default: return [];
    }
  };

  const dfas: Dfa[] = [];
  const dfaByKey = new Map<string, number>();
  const states: StateInfo[] = snapshots.map((snapshot, s) => {
    const meta = metaOf(snapshot);
    const role: Role | undefined = snapshot.hasTag('prompt') ? 'prompt' : snapshot.hasTag('action') ? 'action'
      : snapshot.hasTag('observation') ? 'observation' : snapshot.hasTag('trailing') ? 'trailing' : undefined;
    const literals: DfaLiteral[] = [];
    for (const edge of edges[s]) {
      for (const literal of literalsOf(eventTypes[edge.event], snapshot)) literals.push({ ...literal, event: edge.event });
    }
    let dfa = -1;
    if (literals.length && role !== undefined) {
      const key = literals.map((literal) => `${literal.event}/${literal.endsBefore}/${literal.interrupt}/${literal.lineStart}/${literal.attributes}/${Buffer.from(literal.bytes).toString('hex')}`).sort().join(',');
      let at = dfaByKey.get(key);
      if (at === undefined) { at = dfas.length; dfaByKey.set(key, at); dfas.push(buildDfa(literals)); }
      dfa = at;
    }
    return {
      key: keyOf(snapshot),
      role,
      kind: meta.kind ?? '',
      dfa,
      handover: meta.handover ?? -1,
      reply: meta.reply === undefined ? -1 : replyIndex.get(meta.reply)!,
    };
  });

  const issues: GrammarIssue[] = [];
  const reached = new Set(states.map((state) => state.key));
  const declared = [
    '"prompt"', '"done"',
    ...['text', ...Object.keys(grammar.tags)].map((kind) => JSON.stringify({ model: kind })),
    ...grammar.handovers.map((_, at) => JSON.stringify(`handover-${at}`)),
    ...replyNames.map((name) => JSON.stringify(`reply-${name}`)),
  ];
  for (const key of declared) {
    if (!reached.has(key)) issues.push({ code: 'unreachable-state', severity: 'warning', path: '', message: `state ${key} can never be reached from the prompt` });
  }

  return {
    grammar, machine, states, events: eventTypes.map((type) => ({ type })), next, codes, dfas, replies, handovers,
    initial: 0,
    event: { promptEnd: eventIndex.get('PROMPT_END')!, replyEnd: eventIndex.get('REPLY_END')!, end: eventIndex.get('END')!, continue: eventIndex.get('CONTINUE')! },
    promptOptional: grammar.prompt.then_optional.map((literal) => utf8.encode(literal)),
    issues,
  };
}
