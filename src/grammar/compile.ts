/**
 * Grammar → xstate machine (machine.ts) → the tables the hot loop runs: the state and transition tables
 * here, the byte automata in automata.ts.
 *
 * The xstate machine is the single definition of the protocol: who may write next, which kind a span
 * has, which diagnostics a step raises. xstate costs ~3–16 µs per event (docs/measurements.md §5), so the
 * scanner never calls it: at compile time every reachable state and the events it takes are read from
 * xstate's resolved state nodes (`enumerateStates`), and what the states can hear becomes byte automata.
 */
import { createMachine, type AnyMachineSnapshot, type AnyStateMachine, type StateValue } from 'xstate';
import { grammarIssue, MAX_AUTOMATA, modelLiterals, type GrammarIssue } from './check.ts';
import type { Grammar, OptionalRule } from './schema.ts';
import { machineConfig, machineEvents, type EventFamily, type MachineEvent, type TransitionCode } from './machine.ts';
import { interruptTrigger, literalGroup, type DfaLiteral } from './automata.ts';

export { machineConfig, type TransitionCode } from './machine.ts';
export { interruptTrigger, type Dfa, type DfaLiteral } from './automata.ts';

export type Role = 'prompt' | 'action' | 'observation' | 'trailing';

export interface StateInfo {
  key: string;
  /** Undefined for the instant handover states, which hold no bytes. */
  role?: Role;
  kind: string;
  /** Index into `dfas`, or -1 when the state does not scan. */
  dfa: number;
  handover: number;
  reply: number;
  /** Index into the grammar's `headers` for a template header's state, else -1. */
  header: number;
  /** Per literal of its automaton: 1 where this state takes the literal's event (the model's kinds share one automaton). */
  takes: Uint8Array;
}

/** A column of the tables: one event of the machine (machine.ts says what its fields mean). */
export type EventInfo = MachineEvent;

export interface ReplyInfo {
  name: string;
  /** The literals as text; the scanner reads them in its own bytes (scan/bind.ts: special tokens by id). */
  openText?: string;
  textText?: string;
  closeOptionalText: string[];
  /** The option that switches each `closeOptional` literal on, if any. */
  closeOptionalWhen: Array<string | undefined>;
  /** What else must hold for each `closeOptional` literal (`unless`, `ends_token`, `followed_by`). */
  closeOptionalRules: OptionalRule[];
  /** After the close the reply's own open may follow, and the reply goes on. */
  repeats: boolean;
  /** A fixed budget, the name of the option that holds it, or none. */
  budget: number | string | undefined;
  event: number;
}

/** The replies a handover allows, tried in order (whether the episode may end there is the machine's), and
 * the headers the model may sample right after it to go on (`model_continues`). */
export interface HandoverInfo {
  replies: number[];
  modelContinues: string[];
  /** The stop string's part that also opens the next reply, and the option that gives it to that reply. */
  overlap?: string;
  overlapWhen?: string;
}

export interface CompiledGrammar {
  grammar: Grammar;
  machine: AnyStateMachine;
  states: StateInfo[];
  events: EventInfo[];
  /** `next[state * events.length + event]`: the next state, or -1 when the state does not handle it. */
  next: Int32Array;
  /** Diagnostic codes raised by a transition, same indexing as `next`. */
  codes: Array<TransitionCode[] | undefined>;
  /** The literals each automaton hears, in the text's bytes (bind.ts builds the automata in the scanner's bytes). */
  dfas: Array<{ literals: DfaLiteral[] }>;
  replies: ReplyInfo[];
  handovers: HandoverInfo[];
  initial: number;
  event: { promptEnd: number; replyEnd: number; end: number; continue: number; modelContinues: number; headers: number[] };
  /** Texts the template may add after the prompt's end or a header, with the option that switches each. */
  promptOptionalText: string[];
  promptOptionalWhen: Array<string | undefined>;
  promptOptionalRules: OptionalRule[];
  /** The template's role headers (grammar `headers`). */
  headers: string[];
  /** Problems only compilation can see (unreachable states). */
  issues: GrammarIssue[];
}

const utf8 = new TextEncoder();

interface StateMeta { kind?: string; handover?: number; reply?: string; header?: number }

/** The meta of a snapshot's active state nodes, merged (the leaf's kind wins over its parent's). */
function metaOf(snapshot: AnyMachineSnapshot): StateMeta {
  return Object.values(snapshot.getMeta() as Record<string, StateMeta>).reduce((all, item) => ({ ...all, ...item }), {});
}

type AnyStateNode = AnyStateMachine['root'];
interface Edge { event: number; target: number; codes: TransitionCode[] }

/**
 * Every reachable state and the events it takes, read from xstate's own resolved state nodes: an event is
 * taken by the deepest active node that declares it, as xstate picks transitions, and leads to its
 * target's initial leaf (machine.ts declares no guards, no entry or exit actions and no parallel states;
 * a guard would be refused here). Asking xstate's pure `transition()` for every (state, event) gives the
 * same table at ~16 µs a call: 400 tags took 29 s. test/unit/compile-table.test.ts proves the two equal on
 * every bundled grammar and on random ones.
 */
function enumerateStates(machine: AnyStateMachine, eventIndex: Map<string, number>) {
  const leaves: AnyStateNode[] = [];
  const snapshots: AnyMachineSnapshot[] = [];
  const indexOf = new Map<AnyStateNode, number>();
  const keyOf = (snapshot: AnyMachineSnapshot) => JSON.stringify(snapshot.value);
  /** The state entered by targeting `node`: its initial leaf. */
  const visit = (node: AnyStateNode): number => {
    while (node.type === 'compound') node = node.initial.target[0];
    let at = indexOf.get(node);
    if (at === undefined) {
      at = leaves.length;
      indexOf.set(node, at);
      leaves.push(node);
      let value: StateValue = node.path[node.path.length - 1];
      for (let depth = node.path.length - 2; depth >= 0; depth--) value = { [node.path[depth]]: value };
      snapshots.push(machine.resolveState({ value, context: undefined }));
    }
    return at;
  };
  visit(machine.root);
  const targetOf = new Map<object, number>();
  const codesOf = new Map<object, TransitionCode[]>();
  const edges: Edge[][] = [];
  for (let s = 0; s < leaves.length; s++) {
    const list: Edge[] = [];
    const taken = new Set<string>();
    for (let node: AnyStateNode | undefined = leaves[s]; node; node = node.parent) {
      for (const [type, definitions] of node.transitions) {
        if (taken.has(type)) continue;
        taken.add(type);
        const definition = definitions[0];
        const event = eventIndex.get(type);
        if (definitions.length !== 1 || definition.guard || event === undefined) throw new Error(`internal: ${node.id} declares ${type} in a way the compiler does not read`);
        let target = definition.target?.length ? targetOf.get(definition) : s;
        if (target === undefined) targetOf.set(definition, target = visit(definition.target![0]));
        let codes = codesOf.get(definition);
        if (!codes) {
          // Custom actions are plain records here: read, never executed.
          codes = (definition.actions as Array<{ type: string; params?: { code?: TransitionCode } }>)
            .filter((action) => action.type === 'report').map((action) => action.params!.code!);
          codesOf.set(definition, codes);
        }
        list.push({ event, target, codes });
      }
    }
    edges.push(list);
  }
  return { leaves, snapshots, edges, keyOf };
}

/**
 * Grammar → the scanner's tables, in passes: the machine and its events, every reachable state and its
 * transitions (enumerateStates), the transition table, the replies' and handovers' facts, the byte automata
 * per group of states, each state's facts, and the issues only compilation can see.
 */
export function compileGrammar(grammar: Grammar): CompiledGrammar {
  const machine = createMachine(machineConfig(grammar));
  const events = machineEvents(grammar);
  const eventIndex = new Map(events.map((event, index) => [event.type, index]));
  /** The column of an event, found by its family and index (never by a type string built here). */
  const columnOf = (family: EventFamily, index = -1) => events.findIndex((event) => event.family === family && event.index === index);

  const { snapshots, leaves, edges, keyOf } = enumerateStates(machine, eventIndex);
  const { next, codes } = transitionTable(edges, events.length);
  const replies = replyFacts(grammar, columnOf);
  const handovers = handoverFacts(grammar);
  const roles = snapshots.map(roleOf);
  // The model's kinds form one group; every other state (the prompt, each reply, each header) its own.
  const groupOf = (s: number) => (roles[s] === 'action' ? 'action' : keyOf(snapshots[s]));
  const { dfas, dfaOfGroup } = buildAutomata(grammar, events, snapshots, roles, edges, groupOf);
  const replyIndex = new Map(Object.keys(grammar.replies).map((name, at) => [name, at]));
  const states: StateInfo[] = snapshots.map((snapshot, s) => {
    const meta = metaOf(snapshot);
    const dfa = roles[s] === undefined ? -1 : dfaOfGroup.get(groupOf(s)) ?? -1;
    return {
      key: keyOf(snapshot),
      role: roles[s],
      kind: meta.kind ?? '',
      dfa,
      handover: meta.handover ?? -1,
      reply: meta.reply === undefined ? -1 : replyIndex.get(meta.reply)!,
      header: meta.header ?? -1,
      takes: Uint8Array.from(dfa < 0 ? [] : dfas[dfa].literals, (literal) => (next[s * events.length + literal.event] >= 0 ? 1 : 0)),
    };
  });

  return {
    grammar, machine, states, events, next, codes, dfas, replies, handovers,
    initial: 0,
    event: {
      promptEnd: columnOf('PROMPT_END'), replyEnd: columnOf('REPLY_END'), end: columnOf('END'), continue: columnOf('CONTINUE'),
      modelContinues: columnOf('MODEL_CONTINUES'), headers: grammar.headers.map((_, at) => columnOf('HEADER', at)),
    },
    promptOptionalText: grammar.prompt.then_optional,
    promptOptionalWhen: grammar.prompt.then_optional_when,
    promptOptionalRules: grammar.prompt.then_optional_rules,
    headers: grammar.headers,
    issues: compileIssues(machine, leaves, dfas),
  };
}

/** The edges as flat tables the scanner indexes by `state * events + event`: next state (-1: not taken) and codes. */
function transitionTable(edges: Edge[][], eventCount: number): { next: Int32Array; codes: Array<TransitionCode[] | undefined> } {
  const next = new Int32Array(edges.length * eventCount).fill(-1);
  const codes: Array<TransitionCode[] | undefined> = new Array(edges.length * eventCount);
  edges.forEach((list, s) => {
    for (const edge of list) {
      next[s * eventCount + edge.event] = edge.target;
      if (edge.codes.length) codes[s * eventCount + edge.event] = edge.codes;
    }
  });
  return { next, codes };
}

function replyFacts(grammar: Grammar, columnOf: (family: EventFamily, index?: number) => number): ReplyInfo[] {
  return Object.entries(grammar.replies).map(([name, reply], index) => ({
    name,
    openText: reply.open,
    textText: reply.text,
    closeOptionalText: reply.close_then_optional,
    closeOptionalWhen: reply.close_then_optional_when,
    closeOptionalRules: reply.close_then_optional_rules,
    repeats: reply.repeats,
    budget: reply.max_tokens,
    event: columnOf('REPLY', index),
  }));
}

function handoverFacts(grammar: Grammar): HandoverInfo[] {
  const replyIndex = new Map(Object.keys(grammar.replies).map((name, at) => [name, at]));
  return grammar.handovers.map((handover) => ({
    replies: handover.replies.map((name) => replyIndex.get(name)!),
    modelContinues: handover.model_continues,
    overlap: handover.overlap,
    overlapWhen: handover.overlap_when,
  }));
}

/** A state's role, from the tags machine.ts gives it; undefined for the states between turns (a handover). */
function roleOf(snapshot: AnyMachineSnapshot): Role | undefined {
  return snapshot.hasTag('prompt') ? 'prompt' : snapshot.hasTag('action') ? 'action'
    : snapshot.hasTag('observation') ? 'observation' : snapshot.hasTag('trailing') ? 'trailing' : undefined;
}

/** What the literal readers share: the grammar, its model literals (an interrupt's trigger avoids them) and its handover literals. */
interface LiteralContext { grammar: Grammar; modelLiterals: Uint8Array[]; handoverLiterals: Set<string> }

type EventLiteral = Omit<DfaLiteral, 'event'>;

/** A literal heard as itself: matched whole, the event taken at its end. */
function plainLiteral(literal: string): EventLiteral {
  const bytes = utf8.encode(literal);
  return { source: literal, bytes, back: bytes.length, endsBefore: false, interrupt: -1, header: -1, lineStart: false, attributes: false, opens: false };
}
const plainLiterals = (literal: string | undefined): EventLiteral[] => (literal === undefined ? [] : [plainLiteral(literal)]);

/**
 * The literals that fire `event` in the state of `snapshot`. A reply's end and reopening depend on which reply the
 * state is (its meta); every other event's literals are the same in every state that takes it.
 */
function literalsOf(context: LiteralContext, { family, index, name }: MachineEvent, snapshot: AnyMachineSnapshot): EventLiteral[] {
  const { grammar } = context;
  switch (family) {
    case 'PROMPT_END': return grammar.prompt.ends_after.map(plainLiteral);
    case 'OPEN': {
      const tag = grammar.tags[name!];
      return tag.open.map((literal) => ({ ...plainLiteral(literal), lineStart: tag.line_start, attributes: tag.attributes, opens: true }));
    }
    // A close that is also a handover's literal is heard as the handover (machine.ts declares no close event for it).
    case 'CLOSE': return grammar.tags[name!].close.filter((literal) => !context.handoverLiterals.has(literal)).map(plainLiteral);
    case 'HANDOVER': return plainLiterals(grammar.handovers[index].after);
    case 'INTERRUPT': {
      // Heard anywhere in a model turn: matched on a trigger (a part no model literal holds), so the model's own
      // literals keep their meaning; `back` says how far the text ends past the trigger's start.
      const text = grammar.replies[name!].text!;
      const { trigger, bytesToEnd } = interruptTrigger(utf8.encode(text), context.modelLiterals);
      return [{ ...plainLiteral(text), bytes: trigger, interrupt: index, back: bytesToEnd }];
    }
    // A header starts its own (observation) state at its first byte, as a tag opening does.
    case 'HEADER': return [{ ...plainLiteral(grammar.headers[index]), header: index, opens: true }];
    case 'REOPEN': return plainLiterals(grammar.replies[metaOf(snapshot).reply ?? '']?.open);
    case 'REPLY_END': return replyEndLiterals(grammar, metaOf(snapshot).reply);
    default: return [];
  }
}

/** What ends the reply `name`: its close, or the model literal it ends before; nothing for a fixed-text reply. */
function replyEndLiterals(grammar: Grammar, name: string | undefined): EventLiteral[] {
  const reply = grammar.replies[name ?? ''];
  if (!reply || reply.text !== undefined) return [];
  if (reply.ends_before !== undefined) {
    // The literal is the model's: it keeps the line-start rule of the tag it opens.
    const lineStart = Object.values(grammar.tags).some((tag) => tag.line_start && tag.open.includes(reply.ends_before!));
    return [{ ...plainLiteral(reply.ends_before), endsBefore: true, lineStart }];
  }
  return plainLiterals(reply.close);
}

/**
 * One automaton per group of states whose literals mean the same everywhere: all the model's kinds share
 * one (the scanner passes over a literal the current kind does not take, such as another tag's close: see
 * StateInfo.takes), the prompt and each reply have their own (a reply's close is heard only in it). One per
 * kind made 400 tags 401 automata of ~2 MB each. Groups with the same literals share one automaton.
 */
function buildAutomata(grammar: Grammar, events: MachineEvent[], snapshots: AnyMachineSnapshot[], roles: Array<Role | undefined>, edges: Edge[][], groupOf: (s: number) => string): { dfas: Array<{ literals: DfaLiteral[] }>; dfaOfGroup: Map<string, number> } {
  const groups = new Map<string, { first: number; events: Set<number> }>();
  snapshots.forEach((_, s) => {
    if (roles[s] === undefined) return;
    let group = groups.get(groupOf(s));
    if (!group) groups.set(groupOf(s), group = { first: s, events: new Set() });
    for (const edge of edges[s]) group.events.add(edge.event);
  });
  const context: LiteralContext = {
    grammar,
    modelLiterals: modelLiterals(grammar).map((item) => utf8.encode(item.literal)),
    handoverLiterals: new Set(grammar.handovers.flatMap((handover) => (handover.after === undefined ? [] : [handover.after]))),
  };
  const dfas: Array<{ literals: DfaLiteral[] }> = [];
  const dfaOfGroup = new Map<string, number>();
  const dfaByLiterals = new Map<string, number>();
  for (const [name, group] of groups) {
    // The model's kinds hear no reply's close (REPLY_END, REOPEN): every literal of theirs is the same in each.
    const literals: DfaLiteral[] = [...group.events].sort((a, b) => a - b)
      .flatMap((event) => literalsOf(context, events[event], snapshots[group.first]).map((literal) => ({ ...literal, event })));
    if (!literals.length) continue;
    const key = literals.map((literal) => `${literal.event}/${literal.endsBefore}/${literal.interrupt}/${literal.header}/${literal.lineStart}/${literal.attributes}/${JSON.stringify(literal.source)}/${Buffer.from(literal.bytes).toString('hex')}`).join(',');
    let at = dfaByLiterals.get(key);
    if (at === undefined) { at = dfas.length; dfaByLiterals.set(key, at); dfas.push(literalGroup(literals)); }
    dfaOfGroup.set(name, at);
  }
  return { dfas, dfaOfGroup };
}

/** Problems only compilation can see: a state nothing enters, more automata than the scanner may hold. */
function compileIssues(machine: AnyStateMachine, leaves: AnyStateNode[], dfas: Array<{ literals: DfaLiteral[] }>): GrammarIssue[] {
  const issues: GrammarIssue[] = [];
  // Every state the machine declares can be entered (a kind nested by `contains` whenever its outer kind can).
  const reached = new Set(leaves);
  const unreached = (node: AnyStateNode): void => {
    const children = Object.values(node.states);
    if (!children.length && !reached.has(node)) issues.push(grammarIssue('unreachable-state', '', { name: node.meta?.reply !== undefined ? `reply-${node.meta.reply}` : node.key }));
    children.forEach(unreached);
  };
  unreached(machine.root);
  // The exact count, refused here (at load and by `grammar check` alike), so mask never meets it first.
  if (dfas.length > MAX_AUTOMATA) issues.push(grammarIssue('too-many-automata', 'replies', { detail: `${dfas.length} automata`, budget: MAX_AUTOMATA }));
  return issues;
}
