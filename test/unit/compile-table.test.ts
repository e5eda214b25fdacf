/**
 * The compiler reads each state's transitions from xstate's resolved state nodes (compile.ts
 * `enumerateStates`), not by asking xstate for every (state, event). Here the slow way is the reference:
 * xstate's own `can()` and pure `transition()` for every event from every reachable state, and the tables
 * must be equal (states, targets, diagnostic codes), on every bundled grammar and on random ones.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { initialTransition, transition, type AnyMachineSnapshot } from 'xstate';
import { bundledGrammarNames, loadGrammar, type CompiledGrammar } from '../../src/index.ts';
import { compileRandom, randomGrammar } from '../fuzz/harness.ts';
import { grammarOf } from '../modules/kit.ts';

/** Every reachable state with xstate's own transition(): key → (event type → [target key, codes]). */
function referenceTable(grammar: CompiledGrammar): Map<string, Map<string, [string, string[]]>> {
  const keyOf = (snapshot: AnyMachineSnapshot) => JSON.stringify(snapshot.value);
  const [initial] = initialTransition(grammar.machine);
  const table = new Map<string, Map<string, [string, string[]]>>();
  const queue = [initial];
  table.set(keyOf(initial), new Map());
  while (queue.length) {
    const snapshot = queue.shift()!;
    const row = table.get(keyOf(snapshot))!;
    for (const { type } of grammar.events) {
      if (!snapshot.can({ type })) continue;
      const [after, actions] = transition(grammar.machine, snapshot, { type });
      const codes = (actions as Array<{ type: string; params?: { code?: string } }>).filter((action) => action.type === 'report').map((action) => action.params!.code!);
      row.set(type, [keyOf(after), codes]);
      if (!table.has(keyOf(after))) { table.set(keyOf(after), new Map()); queue.push(after); }
    }
  }
  return table;
}

/** The compiled tables in the same form. */
function compiledTable(grammar: CompiledGrammar): Map<string, Map<string, [string, string[]]>> {
  const E = grammar.events.length;
  return new Map(grammar.states.map((state, s) => {
    const row = new Map<string, [string, string[]]>();
    grammar.events.forEach(({ type }, e) => {
      const target = grammar.next[s * E + e];
      if (target >= 0) row.set(type, [grammar.states[target].key, grammar.codes[s * E + e] ?? []]);
    });
    return [state.key, row];
  }));
}

const sorted = (table: Map<string, Map<string, [string, string[]]>>) =>
  [...table].map(([key, row]) => [key, [...row].sort(([a], [b]) => a.localeCompare(b))] as const).sort(([a], [b]) => a.localeCompare(b));

describe('the compiled transition table is xstate\'s own', () => {
  it.each(bundledGrammarNames())('%s: every state and event as xstate transition() gives them', (name) => {
    const grammar = loadGrammar(name);
    expect(sorted(compiledTable(grammar))).toEqual(sorted(referenceTable(grammar)));
  });

  it('tags nested by contains, lookalikes, a handover after a tag: every state and event', () => {
    const grammar = grammarOf({
      name: 'nesting',
      prompt: { ends_after: ['Go:\n'] },
      tags: {
        calls: { open: '<calls>', close: '</calls>', contains: ['call'] },
        call: { open: '<call>', close: '</call>', contains: ['arg', 'calls'] },
        arg: { open: '<arg>', close: '</arg>' },
        note: { open: 'Note:', line_start: true, contains: ['arg'] },
        obs: { open: '<obs>', close: '</obs>', lookalike: true },
      },
      handovers: [{ after_tag: 'calls', replies: ['out'] }],
      replies: { out: { open: '<out>', close: '</out>' } },
    });
    expect(grammar.issues.filter((issue) => issue.severity === 'error')).toEqual([]);
    expect(sorted(compiledTable(grammar))).toEqual(sorted(referenceTable(grammar)));
  });

  it('random grammars: every state and event', () => {
    let compared = 0;
    fc.assert(fc.property(randomGrammar, (value) => {
      const random = compileRandom(value);
      if (!random) return;
      compared++;
      expect(sorted(compiledTable(random.compiled))).toEqual(sorted(referenceTable(random.compiled)));
    }), { numRuns: 200, seed: 20261130 });
    expect(compared).toBeGreaterThan(50);
  }, 60_000); // 200 grammars compiled and asked of xstate: ~5 s on two busy cores
});
