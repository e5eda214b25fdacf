/**
 * The bulk of a JSON array of token ids, `123,45,6789,` (or `123, 45, 6789, `), read eight bytes at a time.
 *
 * Why WebAssembly: the byte loop (records.ts readIds) pays a mispredicted branch at the end of nearly every id,
 * since ids of 2 to 6 digits follow one another at random; that branch is most of its ~8 ns per token. Finding
 * where an id's digits end and what they are worth without a branch per digit needs 64-bit integers (one load,
 * a mask of the non-digit bytes, its trailing zeros, three multiply-adds that sum the digits in pairs, fours and
 * eights), which JavaScript lacks: the same with two 32-bit halves, tried in JS, was slower than the byte loop
 * (many more operations). The function below is that loop, assembled here by hand: no tool or dependency.
 *
 * It reads only the plain run: ids of 1 to 7 digits, no leading zero, each followed by a comma, or by a comma and
 * one space where the array's first comma has one (json.dumps' spacing). It stops before anything else (the last id, `]`, other spacing, a sign, a fraction, an
 * exponent, a longer number, any other byte) and leaves it to the byte loop, which reads or rejects the rest of
 * the array as it always did. So the ids and the lines accepted are the byte loop's by construction
 * (test/unit/rollout-reader.test.ts checks both against JSON.parse).
 */

/** Bytes copied into the module per call; a longer line is read window after window. */
const WINDOW = 1 << 15;
/** Where the ids are written in the module's memory: after the window (at most one id per two bytes). */
const IDS_AT = WINDOW;
/** Below this many bytes the copy in and out costs more than it saves. */
const MIN_BYTES = 64;

// WebAssembly's binary encoding, only as much as the function needs (https://webassembly.github.io/spec/core/binary/).
const unsigned = (n: number): number[] => {
  const out: number[] = [];
  do {
    const low = n & 0x7f;
    n >>>= 7;
    out.push(n ? low | 0x80 : low);
  } while (n);
  return out;
};
const signed = (n: bigint): number[] => {
  const out: number[] = [];
  for (;;) {
    const low = Number(n & 0x7fn);
    n >>= 7n;
    if ((n === 0n && !(low & 0x40)) || (n === -1n && low & 0x40)) return [...out, low];
    out.push(low | 0x80);
  }
};
const list = (items: number[][]) => [...unsigned(items.length), ...items.flat()];
const section = (id: number, body: number[]) => [id, ...unsigned(body.length), ...body];
const name = (text: string) => list([...text].map((c) => [c.charCodeAt(0)]));
const I32 = 0x7f;
const I64 = 0x7e;
const op = {
  block: [0x02, 0x40],
  loop: [0x03, 0x40],
  end: [0x0b],
  br: (depth: number) => [0x0c, depth],
  brIf: (depth: number) => [0x0d, depth],
  get: (local: number) => [0x20, local],
  set: (local: number) => [0x21, local],
  tee: (local: number) => [0x22, local],
  /** Loads and stores: alignment hint (log2), then offset. */
  load8: (offset: number) => [0x2d, 0, offset],
  load64: [0x29, 0, 0],
  store32: [0x36, 2, 0],
  i32: (n: number) => [0x41, ...signed(BigInt(n))],
  i64: (n: bigint) => [0x42, ...signed(BigInt.asIntN(64, n))],
  eq: [0x46],
  ne: [0x47],
  gtS: [0x4a],
  gtU: [0x4b],
  geU: [0x4f],
  add: [0x6a],
  sub: [0x6b],
  and: [0x71],
  shl: [0x74],
  shrU: [0x76],
  eqz64: [0x50],
  ctz64: [0x7a],
  add64: [0x7c],
  mul64: [0x7e],
  and64: [0x83],
  or64: [0x84],
  xor64: [0x85],
  shl64: [0x86],
  shrU64: [0x88],
  wrap: [0xa7],
  extendU: [0xad],
};
const bytes8 = (byte: number) => BigInt(byte) * 0x0101010101010101n;

/**
 * `run(at, end) → stop`: reads the ids of memory[at, end) while nine bytes are left, writes them from IDS_AT on and
 * their count at IDS_AT - 4, and returns where it stopped (the first byte of an id, or `at`). `sep`: the bytes
 * between ids, `,` (1) or `, ` (2); one function for each.
 */
function runFunction(sep: 1 | 2): number[] {
  // Parameters AT, END; locals OUT (where the next id goes), N (the id's digits), X (eight bytes, as digits), V (its value).
  const [AT, END, OUT, N, X, V] = [0, 1, 2, 3, 4, 5];
  const body = [
    // From here on END is the last place eight bytes and the one after them (the separator's space) can be read
    // (signed: a window shorter than nine bytes is read not at all).
    ...op.get(END), ...op.i32(9), ...op.sub, ...op.set(END),
    ...op.i32(IDS_AT), ...op.set(OUT),
    ...op.block, ...op.loop,
    ...op.get(AT), ...op.get(END), ...op.gtS, ...op.brIf(1),
    // X: the eight bytes at AT, each a digit's value when it is one ('0'..'9' xor 0x30 is 0..9).
    ...op.get(AT), ...op.load64, ...op.i64(bytes8(0x30)), ...op.xor64, ...op.set(X),
    // N: the digits before the first byte that is none: a byte's top bit is set in ((x & 0x7f) + 0x76) | x
    // exactly when x > 9, so the lowest such bit, by its trailing zeros, says where the digits end (8: none).
    ...op.get(X), ...op.i64(bytes8(0x7f)), ...op.and64, ...op.i64(bytes8(0x76)), ...op.add64, ...op.get(X), ...op.or64,
    ...op.i64(bytes8(0x80)), ...op.and64, ...op.ctz64, ...op.wrap, ...op.i32(3), ...op.shrU, ...op.tee(N),
    // No digit, or eight or more: not the plain run.
    ...op.i32(1), ...op.sub, ...op.i32(7), ...op.geU, ...op.brIf(1),
    // A leading zero (JSON has none): left to the byte loop, which rejects it.
    ...op.get(N), ...op.i32(1), ...op.gtU, ...op.get(X), ...op.i64(0xffn), ...op.and64, ...op.eqz64, ...op.and, ...op.brIf(1),
    // The digits must be followed by a comma (and a space).
    ...op.get(AT), ...op.get(N), ...op.add, ...op.load8(0), ...op.i32(0x2c), ...op.ne, ...op.brIf(1),
    ...(sep === 2 ? [...op.get(AT), ...op.get(N), ...op.add, ...op.load8(1), ...op.i32(0x20), ...op.ne, ...op.brIf(1)] : []),
    // V: the N digits moved to the top bytes (the first, most significant digit lowest, zeros before it), then
    // summed in neighbouring pairs (10a + b), fours (100p + q) and eights (10000p + q): the value in the low 32 bits.
    ...op.get(X), ...op.i32(64), ...op.get(N), ...op.i32(3), ...op.shl, ...op.sub, ...op.extendU, ...op.shl64, ...op.set(V),
    ...op.get(V), ...op.i64(10n), ...op.mul64, ...op.get(V), ...op.i64(8n), ...op.shrU64, ...op.add64, ...op.i64(0x00ff00ff00ff00ffn), ...op.and64, ...op.set(V),
    ...op.get(V), ...op.i64(100n), ...op.mul64, ...op.get(V), ...op.i64(16n), ...op.shrU64, ...op.add64, ...op.i64(0x0000ffff0000ffffn), ...op.and64, ...op.set(V),
    ...op.get(V), ...op.i64(10000n), ...op.mul64, ...op.get(V), ...op.i64(32n), ...op.shrU64, ...op.add64, ...op.set(V),
    ...op.get(OUT), ...op.get(V), ...op.wrap, ...op.store32,
    ...op.get(OUT), ...op.i32(4), ...op.add, ...op.set(OUT),
    ...op.get(AT), ...op.get(N), ...op.add, ...op.i32(sep), ...op.add, ...op.set(AT),
    ...op.br(0),
    ...op.end, ...op.end,
    ...op.i32(IDS_AT - 4), ...op.get(OUT), ...op.i32(IDS_AT), ...op.sub, ...op.i32(2), ...op.shrU, ...op.store32,
    ...op.get(AT),
    ...op.end,
  ];
  return [...list([[2, I32], [2, I64]]), ...body];
}

function moduleBytes(): Uint8Array {
  const code = [runFunction(1), runFunction(2)];
  const pages = Math.ceil((IDS_AT + WINDOW * 2) / 65536);
  return new Uint8Array([
    0x00, 0x61, 0x73, 0x6d, 1, 0, 0, 0,
    ...section(1, list([[0x60, ...list([[I32], [I32]]), ...list([[I32]])]])),
    ...section(3, list([[0], [0]])),
    ...section(5, list([[0x00, ...unsigned(pages)]])),
    ...section(7, list([[...name('run1'), 0x00, 0], [...name('run2'), 0x00, 1], [...name('memory'), 0x02, 0]])),
    ...section(10, list(code.map((body) => [...unsigned(body.length), ...body]))),
  ]);
}

type Run = (at: number, end: number) => number;
interface Runner { run1: Run; run2: Run; bytes: Uint8Array; ids: Uint32Array }

/** The part of the WebAssembly API used here (its types are the DOM library's, which this project does not load). */
interface WasmApi {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => { exports: { run1: Run; run2: Run; memory: { buffer: ArrayBuffer } } };
}

let runner: Runner | null | undefined;

/** The module, made on first use; null where WebAssembly cannot run (`node --jitless`): the byte loop reads it all. */
function getRunner(): Runner | null {
  if (runner !== undefined) return runner;
  try {
    const api = (globalThis as { WebAssembly?: WasmApi }).WebAssembly!;
    const { exports } = new api.Instance(new api.Module(moduleBytes()), {});
    runner = { run1: exports.run1, run2: exports.run2, bytes: new Uint8Array(exports.memory.buffer), ids: new Uint32Array(exports.memory.buffer) };
  } catch {
    runner = null;
  }
  return runner;
}

let enabled = true;

/**
 * Off: the byte loop reads every id, as before this module (the tests read every line both ways; bench/stages.ts
 * --ab times both in one process).
 */
export function useIdRun(on: boolean): void {
  enabled = on;
}

/** Where `readIdRun` stopped and how many ids it read (reused call to call). */
export const idRun = { at: 0, count: 0 };

/**
 * Read the plain run of ids in `bytes` from `at` (the first id's first byte) into `ids` from `count` on (room
 * for one id per two bytes is the caller's), as far as it goes. Then `idRun.at` is where it stopped (the start
 * of an id, or `at`) and `idRun.count` the new count.
 */
export function readIdRun(bytes: Uint8Array, at: number, ids: Uint32Array, count: number): void {
  idRun.at = at;
  idRun.count = count;
  const end = bytes.length;
  if (!enabled || end - at < MIN_BYTES) return;
  const comma = bytes.indexOf(0x2c, at);
  if (comma < 0) return;
  const wasm = getRunner();
  if (wasm === null) return;
  const run = bytes[comma + 1] === 0x20 ? wasm.run2 : wasm.run1;
  const out = wasm.ids;
  const slot = (IDS_AT >> 2) - 1;
  for (;;) {
    const n = Math.min(WINDOW, end - at);
    wasm.bytes.set(bytes.subarray(at, at + n));
    const stop = run(0, n);
    const got = out[slot];
    ids.set(out.subarray(slot + 1, slot + 1 + got), count);
    count += got;
    at += stop;
    // Stopped inside the window (not at its last nine bytes), or the window held the rest of the line: done.
    if (stop + 9 <= n || n < WINDOW) break;
  }
  idRun.at = at;
  idRun.count = count;
}
