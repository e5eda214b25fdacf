/**
 * Any tag or reply name the schema accepts compiles and masks: the machine's events are a table of
 * {family, index}, so a name holding the characters its event types are spelt with (`ns:call`), a path
 * separator (`a.b`) or xstate's wildcard (`x.*`) cannot change which step a literal is. Expectations are the
 * streams' construction (each piece encoded on its own, its role known).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Masker } from '../../src/masker.ts';
import { checkGrammarFile } from '../../src/grammar/load.ts';
import { machineEvents } from '../../src/grammar/machine.ts';
import { grammarOf, piecewise, table } from './kit.ts';

const dir = mkdtempSync(join(tmpdir(), 'tagmask-names-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Tags and replies named the awkward ways; the literals are plain. */
function spec(names: { call: string; think: string; wild: string; reply: string; bad: string }) {
  return {
    name: 'names',
    prompt: { ends_after: ['Go:\n'] },
    tags: {
      [names.think]: { open: '<t>', close: '</t>' },
      [names.call]: { open: '<c>', close: '</c>' },
      [names.wild]: { open: '<a>', close: '</a>' },
    },
    handovers: [{ after: '</c>', replies: [names.reply, names.bad] }, { after: '</a>', replies: [], ends_episode: true }],
    replies: {
      [names.reply]: { open: '\n<o>', close: '</o>\n' },
      [names.bad]: { text: '\nBAD.\n', interrupts: true },
    },
  };
}

const AWKWARD = { call: 'ns:call', think: 'a.b', wild: 'x.*', reply: 'tool:result', bad: 'err.*' };
const PLAIN = { call: 'call', think: 'think', wild: 'answer', reply: 'result', bad: 'bad' };

const stream = piecewise([
  ['Question?\nGo:\n', 0],
  ['<t>hm</t><c>q1</c>', 1],
  ['\n<o>doc: see </c> and <a></o>\n', 0],
  ['<t>ok', 1],
  ['\nBAD.\n', 0],
  ['</t><a>done</a>', 1],
]);

describe('event names', () => {
  it('the event table carries family and index, and no type string holds a name', () => {
    const events = machineEvents(grammarOf(spec(AWKWARD)).grammar);
    const call = events.find((event) => event.family === 'OPEN' && event.name === 'ns:call')!;
    expect(call.index).toBe(1);
    expect(events.find((event) => event.family === 'REPLY' && event.name === 'tool:result')!.index).toBe(0);
    for (const event of events) for (const name of Object.values(AWKWARD)) expect(event.type).not.toContain(name);
  });

  it('a grammar with tags named ns:call, a.b, x.* and replies named tool:result, err.* masks as its construction', () => {
    const result = new Masker(grammarOf(spec(AWKWARD)), table).mask(stream.tokens);
    expect(Array.from(result.mask)).toEqual(stream.mask);
    expect(result.spans.map((span) => span.tag)).toContain('ns:call');
    expect(result.spans.map((span) => span.tag)).toContain('tool:result');
    // The same protocol with plain names masks the same: the names change nothing else.
    expect(Array.from(new Masker(grammarOf(spec(PLAIN)), table).mask(stream.tokens).mask)).toEqual(stream.mask);
  });

  it('grammar check: the file compiles with no issue (no "Cannot read properties of undefined")', () => {
    const file = join(dir, 'names.json');
    writeFileSync(file, JSON.stringify(spec(AWKWARD), null, 2));
    const checked = checkGrammarFile(file);
    expect(checked.issues.filter((issue) => issue.severity === 'error')).toEqual([]);
    expect(checked.compiled).toBeDefined();
  });
});
