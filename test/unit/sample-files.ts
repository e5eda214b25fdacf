/** Reading sample files in tests that check the samples themselves (without the masker). */
import { readFileSync } from 'node:fs';

export interface TrajectoryLine {
  id: string;
  note?: string;
  split_at?: number;
  transitions: { ob: number[]; ac: { tokens: number[]; logprobs: number[] }; reward: number; episode_done: boolean }[];
  advantage: number;
}

export const readJsonl = <T>(file: string): T[] =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line.trim())
    .map((line) => JSON.parse(line) as T);

/** Maximal runs of equal mask values: [start, end) with their value. */
export function runs(mask: number[]): { start: number; end: number; value: number }[] {
  const out: { start: number; end: number; value: number }[] = [];
  mask.forEach((v, i) => {
    if (out.length && out[out.length - 1].value === v) out[out.length - 1].end = i + 1;
    else out.push({ start: i, end: i + 1, value: v });
  });
  return out;
}
