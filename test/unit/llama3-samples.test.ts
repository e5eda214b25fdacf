/**
 * Self-consistency of samples/llama3-{llama3_1,llama3}/, checked without any masker: the files are what
 * samples/build/llama3.ts builds now, and the construction follows the Llama 3 format it claims
 * (each sampled turn ends with the stop token it sampled, each reply with the next assistant header,
 * every piece decodes to its text). Regenerate with `npx tsx samples/build/llama3.ts`.
 */
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { readJsonl } from './sample-files.ts';
import { SAMPLES_DIR, decode } from '../../samples/build/search-r1.ts';
import { retokenizedLine, rolloutLine, trajectoryLine } from '../../samples/build/chat-grammars.ts';
import { familyTokenizer, tokenizeFamilyCase, type BuiltFamilyCase } from '../../samples/build/family-kit.ts';
import { LLAMA3_TARGETS, llama3Cases, renderLlama } from '../../samples/build/llama3.ts';

const HEADER = '<|start_header_id|>assistant<|end_header_id|>\n\n';

describe.each(LLAMA3_TARGETS)('samples/$folder', (target) => {
  let built: BuiltFamilyCase[];
  beforeAll(() => {
    const tokenizer = familyTokenizer(target.tokenizerPackage);
    built = llama3Cases().map((c) => tokenizeFamilyCase(tokenizer, c));
  }, 60_000);

  it('the files are what the builder makes now (rerun it after editing)', () => {
    const dir = path.join(SAMPLES_DIR, target.folder);
    expect(readJsonl(path.join(dir, 'rollouts.jsonl'))).toEqual(built.map(rolloutLine));
    expect(readJsonl(path.join(dir, 'trajectories.jsonl'))).toEqual(built.map(trajectoryLine));
    const plain = built.filter((b) => !b.chatCase.pieces.some((piece) => piece.text.includes('\u0001')));
    expect(readJsonl(path.join(dir, 'retokenized.jsonl'))).toEqual(plain.map((b) => retokenizedLine(familyTokenizer(target.tokenizerPackage), b)));
  });

  it('every piece decodes to its text; turns end with a sampled stop token, replies with the next assistant header', () => {
    const tokenizer = familyTokenizer(target.tokenizerPackage);
    for (const b of built) {
      for (const segment of b.segments) expect(decode(tokenizer, segment.ids), b.chatCase.id).toBe(segment.text);
      for (const segment of b.segments.filter((s) => s.kind === 'action')) expect(segment.text, b.chatCase.id).toMatch(/<\|eot_id\|>$|<\|eom_id\|>$/);
      for (const segment of b.segments.filter((s) => s.kind === 'observation')) expect(segment.text.endsWith(HEADER), b.chatCase.id).toBe(true);
      const prompt = b.segments[0].text;
      expect(prompt.startsWith('<|begin_of_text|>'), b.chatCase.id).toBe(true);
      expect(prompt.endsWith(HEADER) !== Boolean(b.chatCase.statePromptLength), b.chatCase.id).toBe(true);
    }
  });

  it('the stream is the template\'s rendering of the conversation, turn ends as sampled', () => {
    const b = built.find((item) => item.chatCase.id === 'd-user-follow-up')!;
    const stream = b.segments.filter((s) => s.kind !== 'padding').map((s) => s.text).join('');
    const messages = [
      { role: 'system', content: b.segments[0].text.match(/system<\|end_header_id\|>\n\n([\s\S]*?)<\|eot_id\|>/)![1] },
      { role: 'user', content: 'Is it warm in Rome?' },
    ];
    const texts = b.segments.map((s) => s.text);
    for (let i = 1; i < texts.length; i++) {
      if (b.segments[i].kind === 'action') messages.push({ role: 'assistant', content: texts[i].replace(/<\|eot_id\|>$/, '') });
      else for (const m of texts[i].matchAll(/<\|start_header_id\|>(ipython|user)<\|end_header_id\|>\n\n([\s\S]*?)<\|eot_id\|>/g)) messages.push({ role: m[1], content: m[2] });
    }
    expect(stream).toBe(renderLlama(messages, false));
  });
});
