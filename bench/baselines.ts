/**
 * Baselines measured in the same process as tagmask, so results are ratios, not absolute claims.
 *
 *  - floor: `mask[i] = lut[ids[i]]`, one table lookup and one store per token. Nothing that reads every
 *    id can be faster than this; it is the memory-bandwidth / lookup floor.
 *  - naive: what one would write without a byte scanner (docs/measurements.md §4): per rollout, concatenate the
 *    token pieces into a byte buffer, view it as a latin1 string, find the prompt end with indexOf and the
 *    observation envelopes with a regex, then give mask 0 to every token overlapping an observation byte.
 *    It is a speed reference, not a correct masker (it ignores the protocol: a model-written
 *    `<information>` is taken as an observation); `agreement` is reported for information only.
 */
import type { ByteTable } from '../src/index.ts';

/** A per-id byte: 1 when the piece holds a `<` (any per-id property would do; the loop is what counts). */
export function floorTable(table: ByteTable): Uint8Array {
  const lut = new Uint8Array(table.size);
  for (let id = 0; id < table.size; id++) {
    for (let p = table.offsets[id]; p < table.offsets[id + 1]; p++) if (table.pieces[p] === 0x3c) { lut[id] = 1; break; }
  }
  return lut;
}

export function floorMask(ids: Uint32Array, lut: Uint8Array, mask: Uint8Array): void {
  for (let i = 0, n = ids.length; i < n; i++) mask[i] = lut[ids[i]];
}

const PROMPT_ENDS = ['<|im_start|>assistant\n', '<|start_header_id|>assistant<|end_header_id|>\n\n'];
const OBSERVATION = /\n\n<information>[\s\S]*?(?:<\/information>\n\n|$)|\nMy previous action is invalid\. [^\n]*\n/g;
const PADDING = /(?:<\|endoftext\|>|<\|im_end\|>|<\|end_of_text\|>|<\|eot_id\|>)+$/;

export class NaiveMasker {
  private buffer = Buffer.allocUnsafe(1 << 16);
  private byteStart = new Int32Array(1 << 12);

  constructor(private readonly table: ByteTable) {}

  maskBatch(ids: Uint32Array, starts: Uint32Array, promptLengths: Int32Array, mask: Uint8Array): void {
    for (let r = 0; r + 1 < starts.length; r++) this.maskOne(ids, starts[r], starts[r + 1], promptLengths[r], mask);
  }

  private maskOne(ids: Uint32Array, s0: number, s1: number, promptLength: number, mask: Uint8Array): void {
    const { pieces, offsets } = this.table;
    const n = s1 - s0;
    if (this.byteStart.length < n + 1) this.byteStart = new Int32Array(2 * (n + 1));
    const byteStart = this.byteStart;
    let length = 0;
    for (let i = 0; i < n; i++) {
      byteStart[i] = length;
      length += offsets[ids[s0 + i] + 1] - offsets[ids[s0 + i]];
    }
    byteStart[n] = length;
    if (this.buffer.length < length) this.buffer = Buffer.allocUnsafe(2 * length);
    const buffer = this.buffer;
    for (let i = 0; i < n; i++) buffer.set(pieces.subarray(offsets[ids[s0 + i]], offsets[ids[s0 + i] + 1]), byteStart[i]);
    const text = buffer.toString('latin1', 0, length);

    // Prompt end (byte), trailing padding (byte), observation byte ranges.
    let promptEnd = -1;
    if (promptLength >= 0) promptEnd = byteStart[promptLength];
    else {
      for (const header of PROMPT_ENDS) {
        const at = text.indexOf(header);
        if (at >= 0 && (promptEnd < 0 || at + header.length < promptEnd)) promptEnd = at + header.length;
      }
      if (promptEnd < 0) promptEnd = length;
    }
    const padding = PADDING.exec(text);
    const padStart = padding ? padding.index : length;

    let t = 0;
    while (t < n && byteStart[t] < promptEnd) mask[s0 + t++] = 0;
    OBSERVATION.lastIndex = promptEnd;
    for (let match = OBSERVATION.exec(text); match; match = OBSERVATION.exec(text)) {
      const from = match.index;
      const to = from + match[0].length;
      // Tokens wholly before the observation are action; any token overlapping it is not.
      while (t < n && byteStart[t + 1] <= from) mask[s0 + t++] = 1;
      while (t < n && byteStart[t] < to) mask[s0 + t++] = 0;
      if (match[0].length === 0) OBSERVATION.lastIndex++;
    }
    while (t < n && byteStart[t] < padStart) mask[s0 + t++] = 1;
    while (t < n) mask[s0 + t++] = 0;
  }
}
