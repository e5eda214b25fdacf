/**
 * Self-consistency of the Search-R1 conformance samples (samples/search-r1-*), checked WITHOUT any
 * masker: the files must match what samples/build/search-r1.ts constructs, and the construction must
 * be internally coherent. Regenerate with `npx tsx samples/build/search-r1.ts`.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { readJsonl, runs, type TrajectoryLine } from './sample-files.ts';
import {
  INVALID_ACTION_MESSAGE,
  SAMPLES_DIR,
  TARGETS,
  buildSuite,
  decode,
  stripThinking,
  type Suite,
} from '../../samples/build/search-r1.ts';

interface RolloutLine {
  id: string;
  note: string;
  tokens: number[];
  mask: number[];
  prompt_length?: number;
  options?: { max_obs_tokens: number };
}
type RetokenizedLine = Omit<RolloutLine, 'mask'>;

const FACTS = 'abcdefghijk'.split('');



const startsWith = (seq: number[], prefix: number[]) => prefix.every((id, i) => seq[i] === id);

describe.each(TARGETS)('samples/$folder', (target) => {
  const dir = path.join(SAMPLES_DIR, target.folder);
  let suite: Suite;
  let rollouts: RolloutLine[];
  let retokenized: RetokenizedLine[];
  let trajectories: TrajectoryLine[];

  beforeAll(() => {
    suite = buildSuite(target);
    rollouts = readJsonl(path.join(dir, 'rollouts.jsonl'));
    retokenized = readJsonl(path.join(dir, 'retokenized.jsonl'));
    trajectories = readJsonl(path.join(dir, 'trajectories.jsonl'));
  });

  const built = (id: string) => {
    const r = suite.rollouts.find((r) => r.scenario.id === id);
    if (!r) throw new Error(`no scenario ${id} in the generator`);
    return r;
  };

  it('suite.json points at the three files and an npm tokenizer path', () => {
    const json = JSON.parse(readFileSync(path.join(dir, 'suite.json'), 'utf8'));
    expect(json).toEqual({
      grammar: 'search-r1',
      tokenizer: target.tokenizerPackage,
      rollouts: 'rollouts.jsonl',
      retokenized: 'retokenized.jsonl',
      trajectories: 'trajectories.jsonl',
    });
  });

  it('the files are what the generator builds now (rerun it after editing)', () => {
    expect(rollouts.map((l) => l.id)).toEqual(suite.rollouts.map((r) => r.scenario.id));
    for (const line of rollouts) {
      const r = built(line.id);
      expect(line.tokens, line.id).toEqual(r.segments.flatMap((s) => s.ids));
    }
  });

  it('has every fact a–k, each id once', () => {
    const ids = rollouts.map((l) => l.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const fact of FACTS) expect(ids.some((id) => id.startsWith(`${fact}-`)), `fact ${fact}`).toBe(true);
  });

  it('mask is 0/1, one entry per token, and follows the piece provenance', () => {
    for (const line of rollouts) {
      expect(line.mask.length, line.id).toBe(line.tokens.length);
      expect(line.mask.every((m) => m === 0 || m === 1), line.id).toBe(true);
      const segments = built(line.id).segments;
      expect(line.mask, line.id).toEqual(segments.flatMap((s) => s.ids.map(() => (s.kind === 'action' ? 1 : 0))));
      expect(line.note.length, line.id).toBeGreaterThan(20);
    }
  });

  it('the decoded 1-runs are exactly the action strings, in order', () => {
    for (const line of rollouts) {
      const actions = built(line.id).segments.filter((s) => s.kind === 'action');
      const ones = runs(line.mask).filter((r) => r.value === 1);
      // Actions are never adjacent (a reply, or the end, always follows), so each is one run.
      expect(ones.length, line.id).toBe(actions.length);
      const decoded = ones.map((r) => decode(suite.tokenizer, line.tokens.slice(r.start, r.end)));
      expect(decoded.join(''), line.id).toBe(actions.map((a) => a.text).join(''));
      expect(decoded, line.id).toEqual(actions.map((a) => a.text));
    }
  });

  it('the stream starts with the prompt and prompt_length, when given, is where it ends', () => {
    for (const line of rollouts) {
      const prompt = built(line.id).segments[0];
      expect(prompt.kind).toBe('prompt');
      expect(line.mask.slice(0, prompt.ids.length).every((m) => m === 0), line.id).toBe(true);
      if (line.prompt_length !== undefined) expect(line.prompt_length, line.id).toBe(prompt.ids.length);
    }
    const a = rollouts.find((l) => l.id.startsWith('a-'))!;
    expect(a.prompt_length).toBeUndefined();
    const promptText = built(a.id).segments[0].text;
    for (const tag of ['<think>', '</think>', '<search> query </search>', '<information>', '</information>', '<answer> Beijing </answer>']) {
      expect(promptText).toContain(tag);
    }
    expect(rollouts.filter((l) => l.id.startsWith('b-') && l.prompt_length !== undefined).length).toBeGreaterThanOrEqual(2);
  });

  it('every observation follows the Search-R1 envelopes (or a cut prefix of one)', () => {
    for (const line of rollouts) {
      const r = built(line.id);
      for (const s of r.segments.filter((s) => s.kind === 'observation')) {
        const isInfo = s.text.startsWith('\n\n<information>');
        if (!isInfo) expect(s.text, line.id).toBe(INVALID_ACTION_MESSAGE);
        else if (r.maxObsLength === undefined) expect(s.text.endsWith('</information>\n\n'), line.id).toBe(true);
      }
    }
  });

  it('fact h: max_obs_tokens is on the line and the reply was cut to exactly that many tokens', () => {
    const cut = rollouts.filter((l) => l.id.startsWith('h-'));
    expect(cut.length).toBeGreaterThan(0);
    for (const line of cut) {
      const n = line.options?.max_obs_tokens;
      expect(n, line.id).toBeTypeOf('number');
      const observations = built(line.id).segments.filter((s) => s.kind === 'observation');
      expect(observations.some((s) => s.ids.length === n && !s.text.endsWith('</information>\n\n')), line.id).toBe(true);
      expect(observations.every((s) => s.ids.length <= n!), line.id).toBe(true);
    }
    for (const line of rollouts.filter((l) => !l.id.startsWith('h-'))) expect(line.options, line.id).toBeUndefined();
  });

  it('fact i: trailing pad tokens are masked 0', () => {
    const line = rollouts.find((l) => l.id.startsWith('i-'))!;
    const padId = suite.tokenizer.padId;
    const tail = line.tokens.slice(line.tokens.lastIndexOf(padId) + 1);
    expect(tail).toEqual([]);
    const pads = line.tokens.length - line.tokens.findLastIndex((id) => id !== padId) - 1;
    expect(pads).toBeGreaterThan(0);
    expect(line.mask.slice(-pads).every((m) => m === 0)).toBe(true);
  });

  it('fact k: the last non-pad token is the end of an action (no answer, no reply)', () => {
    for (const line of rollouts.filter((l) => l.id.startsWith('k-'))) {
      const segments = built(line.id).segments.filter((s) => s.kind !== 'padding');
      const last = segments[segments.length - 1];
      expect(last.kind, line.id).toBe('action');
      expect(last.text.includes('<answer>'), line.id).toBe(false);
    }
  });

  it('each retokenized line decodes to the same text as its rollout, and re-encodes it in one piece', () => {
    expect(retokenized.map((l) => l.id)).toEqual(rollouts.map((l) => l.id));
    for (const [i, line] of retokenized.entries()) {
      const twin = rollouts[i];
      expect('mask' in line, line.id).toBe(false);
      const text = decode(suite.tokenizer, twin.tokens);
      expect(decode(suite.tokenizer, line.tokens), line.id).toBe(text);
      expect(line.tokens, line.id).toEqual(suite.tokenizer.tok.encode(text, { add_special_tokens: false }));
      expect(line.options, line.id).toEqual(twin.options);
      if (twin.prompt_length !== undefined) {
        expect(decode(suite.tokenizer, line.tokens.slice(0, line.prompt_length)), line.id).toBe(
          decode(suite.tokenizer, twin.tokens.slice(0, twin.prompt_length)),
        );
      }
    }
    // One-piece encoding merges at least some action/observation boundaries (e.g. "</search>" + "\n\n").
    expect(retokenized.some((l, i) => l.tokens.length < rollouts[i].tokens.length)).toBe(true);
  });

  it('trajectories: one per rollout, obs extend, and the merged stream is the rollout minus padding', () => {
    for (const line of rollouts) {
      const traj = trajectories.find((t) => t.id === line.id);
      expect(traj, line.id).toBeDefined();
      expect(traj!.advantage).toBe(1);
      const steps = traj!.transitions;
      const actions = built(line.id).segments.filter((s) => s.kind === 'action');
      expect(steps.map((s) => s.ac.tokens), line.id).toEqual(actions.map((a) => a.ids));
      steps.forEach((step, k) => {
        expect(step.ac.logprobs.length).toBe(step.ac.tokens.length);
        expect(step.ac.logprobs.every((p) => p < 0)).toBe(true);
        expect(step.episode_done).toBe(k === steps.length - 1);
        if (k > 0) expect(startsWith(step.ob, [...steps[k - 1].ob, ...steps[k - 1].ac.tokens]), `${line.id} #${k}`).toBe(true);
      });
      const last = steps[steps.length - 1];
      const stream = [...last.ob, ...last.ac.tokens];
      expect(line.tokens.slice(0, stream.length), line.id).toEqual(stream);
      expect(line.tokens.slice(stream.length).every((id) => id === suite.tokenizer.padId), line.id).toBe(true);
    }
  });

  it('trajectories: the think-stripped variant stops extending exactly at its stated index', () => {
    const split = trajectories.filter((t) => t.split_at !== undefined);
    expect(split.length).toBeGreaterThan(0);
    for (const traj of split) {
      expect(traj.note).toMatch(new RegExp(`index ${traj.split_at}`));
      const steps = traj.transitions;
      steps.forEach((step, k) => {
        if (k === 0) return;
        const extends_ = startsWith(step.ob, [...steps[k - 1].ob, ...steps[k - 1].ac.tokens]);
        expect(extends_, `${traj.id} #${k}`).toBe(k !== traj.split_at);
      });
      // Its history holds the earlier action without the <think> block.
      const base = built(traj.id.split('.')[0]);
      const firstAction = base.segments.find((s) => s.kind === 'action')!;
      const shown = decode(suite.tokenizer, steps[1].ob);
      expect(shown).toContain(stripThinking(firstAction.text));
      expect(shown).not.toContain(firstAction.text);
    }
  });
});
