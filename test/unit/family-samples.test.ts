/**
 * Self-consistency of the harmony, deepseek-v3 and qwen3_5 sample suites, without any masker: the files are what
 * samples/build/{harmony,deepseek}.ts construct, and the construction keeps the protocol facts it claims.
 * Regenerate with `npx tsx samples/build/harmony.ts`, `npx tsx samples/build/deepseek.ts` and `npx tsx samples/build/qwen3_5.ts`.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SAMPLES_DIR } from '../../samples/build/search-r1.ts';
import { familyTokenizer, tokenizeFamilyCase } from '../../samples/build/family-kit.ts';
import { harmonyCases, HARMONY_TARGETS } from '../../samples/build/harmony.ts';
import { deepseekCases, DEEPSEEK_TARGETS } from '../../samples/build/deepseek.ts';
import { qwen35Cases, QWEN3_5_TARGETS } from '../../samples/build/qwen3_5.ts';
import { roleColonCases, ROLE_COLON_TARGETS } from '../../samples/build/role-colon.ts';
import { glmCases, GLM_TARGETS } from '../../samples/build/glm.ts';
import { gemma3Cases, GEMMA3_TARGETS } from '../../samples/build/gemma3.ts';
import { mistralCases, MISTRAL_TARGETS } from '../../samples/build/mistral.ts';
import { minimaxCases, MINIMAX_TARGETS } from '../../samples/build/minimax.ts';
import { kimiCases, KIMI_TARGETS } from '../../samples/build/kimi.ts';
import { gemma4Cases, GEMMA4_TARGETS } from '../../samples/build/gemma4.ts';
import { nemotron3Cases, NEMOTRON3_TARGETS } from '../../samples/build/nemotron3.ts';

const TARGETS = [
  ...HARMONY_TARGETS.map((target) => ({ target, cases: () => harmonyCases(target.tokenizer === 'gptoss') })),
  ...DEEPSEEK_TARGETS.map((target) => ({ target, cases: () => deepseekCases(target.tokenizer === 'deepseek') })),
  ...QWEN3_5_TARGETS.map((target) => ({ target, cases: qwen35Cases })),
  ...ROLE_COLON_TARGETS.map((target) => ({ target, cases: roleColonCases })),
  ...GLM_TARGETS.map((target) => ({ target, cases: glmCases })),
  ...GEMMA3_TARGETS.map((target) => ({ target, cases: gemma3Cases })),
  ...MISTRAL_TARGETS.map((target) => ({ target, cases: mistralCases })),
  ...MINIMAX_TARGETS.map((target) => ({ target, cases: minimaxCases })),
  ...KIMI_TARGETS.map((target) => ({ target, cases: kimiCases })),
  ...GEMMA4_TARGETS.map((target) => ({ target, cases: gemma4Cases })),
  ...NEMOTRON3_TARGETS.map((target) => ({ target, cases: nemotron3Cases })),
];

const lines = (folder: string, file: string) => readFileSync(path.join(SAMPLES_DIR, folder, file), 'utf8').trim().split('\n').map((line) => JSON.parse(line));

describe.each(TARGETS)('samples/$target.folder', ({ target, cases }) => {
  const tokenizer = familyTokenizer(target.tokenizerPackage);
  const built = cases().map((c) => tokenizeFamilyCase(tokenizer, c));

  it('rollouts.jsonl is what the builder constructs (ids, tokens, mask, options)', () => {
    const file = lines(target.folder, 'rollouts.jsonl');
    expect(file.map((line) => line.id)).toEqual(built.map((b) => b.chatCase.id));
    built.forEach((b, i) => {
      expect(file[i].tokens).toEqual(b.segments.flatMap((s) => s.ids));
      expect(file[i].mask).toEqual(b.segments.flatMap((s) => s.ids.map(() => (s.kind === 'action' ? 1 : 0))));
      expect(file[i].options).toEqual(b.chatCase.options);
    });
  });

  it('every rollout opens with a prompt and has action; each piece decodes to its text', () => {
    for (const b of built) {
      expect(b.segments[0].kind).toBe('prompt');
      expect(b.segments.some((s) => s.kind === 'action' && s.ids.length > 0)).toBe(true);
      for (const s of b.segments) if (s.kind !== 'padding') expect(tokenizer.tok.decode(s.ids, { skip_special_tokens: false, clean_up_tokenization_spaces: false })).toBe(s.text);
    }
  });

  if (target.grammar === 'harmony') {
    it('Harmony: the prompt and every environment reply end with the generation prompt <|start|>assistant; completions end with a stop token unless cut', () => {
      for (const b of built) {
        for (const s of b.segments) {
          // A stated prompt_length may end before the generation prompt, which then opens the response (SkyRL).
          if (s.kind === 'prompt' && !b.chatCase.statePromptLength) expect(s.text.endsWith('<|start|>assistant'), b.chatCase.id).toBe(true);
          if (s.kind === 'observation') {
            expect(s.text.endsWith('<|start|>assistant'), b.chatCase.id).toBe(true);
            expect(s.text).toMatch(/^<\|start\|>(functions\.|user|assistant$)/);
          }
        }
        const actions = b.segments.filter((s) => s.kind === 'action');
        for (const s of actions.slice(0, -1)) expect(s.text).toMatch(/<\|(call|return)\|>$/);
      }
    });
    if (target.tokenizer === 'gptoss') {
      it('quoted markers are ordinary tokens: the quoting rollout holds fewer <|end|> ids than <|end|> texts', () => {
        const quoted = built.find((b) => b.chatCase.id === 'i-quoted-markers')!;
        const endId = tokenizer.tok.encode('<|end|>', { add_special_tokens: false });
        expect(endId).toHaveLength(1);
        const ids = quoted.segments.flatMap((s) => s.ids).filter((id) => id === endId[0]).length;
        const texts = quoted.segments.map((s) => s.text).join('').split('<|end|>').length - 1;
        expect(ids).toBe(texts - 1);
      });
    }
  } else if (target.grammar === 'minimax-m2') {
    it('MiniMax M2: replies follow the sampled [e~[ and end with the generation prompt and its <think>\\n prefill', () => {
      for (const b of built) {
        for (const s of b.segments.filter((segment) => segment.kind === 'observation')) expect(s.text).toMatch(/^\n\]~b\][a-z]+[^]*\[e~\[\n\]~b\]ai\n<think>\n$/);
        for (const s of b.segments.filter((segment) => segment.kind === 'action').slice(0, -1)) expect(s.text.endsWith('[e~['), b.chatCase.id).toBe(true);
      }
    });
  } else if (target.grammar === 'kimi-k2') {
    it('Kimi K2: replies follow the sampled <|im_end|> with no newline, open a user or system turn and end with the generation prompt', () => {
      for (const b of built) {
        for (const s of b.segments.filter((segment) => segment.kind === 'observation')) expect(s.text).toMatch(/^<\|im_(user|system)\|>[^]*<\|im_end\|><\|im_assistant\|>assistant<\|im_middle\|>$/);
        for (const s of b.segments.filter((segment) => segment.kind === 'action').slice(0, -1)) expect(s.text).toMatch(/^<think>[^]*<\/think>[^]*<\|im_end\|>$/);
        expect(b.segments[0].text.endsWith('<|im_assistant|>assistant<|im_middle|>'), b.chatCase.id).toBe(true);
      }
    });
  } else if (target.grammar === 'gemma4') {
    it('Gemma 4: a model turn stops on <turn|> or on the <|tool_response> it sampled; results go on in the same turn, user replies end with the generation prompt', () => {
      for (const b of built) {
        b.segments.forEach((s, i) => {
          const next = b.segments[i + 1];
          if (s.kind === 'action' && next?.kind === 'observation') expect(s.text).toMatch(/(<turn\|>|<\|tool_response>)$/);
          if (s.kind === 'observation' && b.segments[i - 1].text.endsWith('<|tool_response>')) expect(s.text).toMatch(/^response:[^]*<tool_response\|>(<\|channel>thought\n<channel\|>)?$/);
          if (s.kind === 'observation' && b.segments[i - 1].text.endsWith('<turn|>')) expect(s.text).toMatch(/^\n<\|turn>user\n[^]*<turn\|>\n<\|turn>model\n(<\|channel>thought\n<channel\|>)?$/);
        });
        expect(b.segments[0].text.startsWith('<bos>'), b.chatCase.id).toBe(true);
      }
    });
  } else if (target.grammar === 'mistral') {
    it('Mistral: no header before the model: replies end [/INST] or [/TOOL_RESULTS]; finished turns end with the sampled </s>', () => {
      for (const b of built) {
        for (const s of b.segments.filter((segment) => segment.kind !== 'action')) expect(s.text).toMatch(/\[\/(INST|TOOL_RESULTS)\]$/);
        for (const s of b.segments.filter((segment) => segment.kind === 'action').slice(0, -1)) expect(s.text.endsWith('</s>'), b.chatCase.id).toBe(true);
      }
    });
  } else if (target.grammar === 'gemma3') {
    it('Gemma 3: replies open a user turn after the sampled <end_of_turn> and end with the generation prompt', () => {
      for (const b of built) {
        for (const s of b.segments.filter((segment) => segment.kind === 'observation')) expect(s.text).toMatch(/^\n<start_of_turn>user\n[^]*<end_of_turn>\n<start_of_turn>model\n$/);
        expect(b.segments[0].text.startsWith('<bos>'), b.chatCase.id).toBe(true);
      }
    });
  } else if (target.grammar === 'glm') {
    it('GLM: a turn followed by a reply ends with the sampled <|observation|> or <|user|>; the reply is the rest of that turn, up to <|assistant|>', () => {
      for (const b of built) {
        b.segments.forEach((s, i) => {
          const next = b.segments[i + 1];
          if (s.kind === 'action' && next?.kind === 'observation') expect(s.text).toMatch(/<\|(observation|user)\|>$/);
          if (s.kind === 'observation') {
            expect(s.text).toMatch(/<\|assistant\|>(\n<think><\/think>)?$/);
            expect(s.text.startsWith('<|'), b.chatCase.id).toBe(false);
          }
        });
      }
    });
  } else if (target.grammar === 'role_colon') {
    it('role_colon: every sampled turn but a cut or EOS-ended one ends with the stop string; replies end with the generation prompt', () => {
      for (const b of built) {
        for (const s of b.segments.filter((segment) => segment.kind === 'action').slice(0, -1)) expect(s.text.endsWith('\n\nUser:'), b.chatCase.id).toBe(true);
        for (const s of b.segments.filter((segment) => segment.kind === 'observation')) expect(s.text).toMatch(/^ [^]*\n\nAssistant:$/);
      }
    });
  } else if (target.folder === 'nemotron3-qwen3') {
    it('Nemotron-3: the prompt opens with a system turn; replies open a turn after the sampled <|im_end|> and end with the generation prompt (<think>\\n, or <think></think> with thinking off)', () => {
      for (const b of built) {
        expect(b.segments[0].text.startsWith('<|im_start|>system\n'), b.chatCase.id).toBe(true);
        for (const s of b.segments.filter((segment) => segment.kind === 'observation')) expect(s.text).toMatch(/^\n<\|im_start\|>user\n[^]*<\|im_end\|>\n<\|im_start\|>assistant\n<think>(\n|<\/think>)$/);
        for (const s of b.segments.filter((segment) => segment.kind === 'action').slice(0, -1)) expect(s.text.endsWith('<|im_end|>'), b.chatCase.id).toBe(true);
      }
    });
  } else if (target.grammar === 'qwen3_5') {
    it('Qwen3.5: every reply opens a turn after the sampled <|im_end|> and ends with the generation prompt and its prefill', () => {
      for (const b of built) {
        for (const s of b.segments.filter((segment) => segment.kind === 'observation')) {
          if (b.chatCase.statePromptLength) continue;
          expect(s.text).toMatch(/^\n<\|im_start\|>(user|system)\n/);
          expect(s.text.endsWith('<|im_end|>\n<|im_start|>assistant\n<think>\n'), b.chatCase.id).toBe(true);
        }
        for (const s of b.segments.filter((segment) => segment.kind === 'action').slice(0, -1)) expect(s.text.endsWith('<|im_end|>'), b.chatCase.id).toBe(true);
      }
    });
  } else {
    it('DeepSeek: replies after tool calls are tool outputs with no <｜Assistant｜>; user replies end with <｜Assistant｜> and what its generation prompt adds', () => {
      for (const b of built) {
        for (const s of b.segments.filter((segment) => segment.kind === 'observation')) {
          if (s.text.startsWith('<｜User｜>')) expect(s.text).toMatch(/<｜Assistant｜>(<think>\n?|<\/think>)?$/);
          else if (s.text.startsWith('<｜Assistant｜>')) expect(b.chatCase.statePromptLength, b.chatCase.id).toBe(true); // the generation prompt after a stated prompt_length
          else {
            expect(s.text).toMatch(/^\n?<｜tool▁outputs?▁begin｜>/);
            expect(s.text).not.toContain('<｜Assistant｜>');
          }
        }
      }
    });
  }
});
