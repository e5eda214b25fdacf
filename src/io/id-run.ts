/**
 * The bulk of a JSON array of token ids, `123,45,6789,` (or `123, 45, 6789, `), read eight bytes at a time.
 *
 * Why WebAssembly: the byte loop (records.ts readIds) pays a mispredicted branch at the end of nearly every id,
 * since ids of 2 to 6 digits follow one another at random; that branch is most of its ~8 ns per token. Finding
 * where an id's digits end and what they are worth without a branch per digit needs 64-bit integers (one load,
 * a mask of the non-digit bytes, its trailing zeros, three multiply-adds that sum the digits in pairs, fours and
 * eights), which JavaScript lacks: the same with two 32-bit halves, tried in JS, was slower than the byte loop
 * (many more operations). The functions below are that loop, assembled here by hand: no tool or dependency.
 *
 * It reads only the plain run: ids of 1 to 7 digits, no leading zero, each followed by a comma, or by a comma
 * and one space where the array's first comma has one (json.dumps' spacing). It stops before anything else (the
 * last id, `]`, other spacing, a sign, a fraction, an exponent, a longer number, any other byte) and leaves it to
 * the byte loop, which reads or rejects the rest of the array as it always did. So the ids and the lines accepted
 * are the byte loop's by construction (test/unit/rollout-reader.test.ts checks both against JSON.parse, with the
 * run and without). A long window is read as two streams at once (runTwo), which keeps the processor busier.
 * Measured (bench/README.md, CLI stages): readPlainLine at 0.52-0.56 of the byte loop's CPU in paired runs.
 */

/** Bytes copied into the module per call; a longer line is read window after window. */
const WINDOW = 1 << 15;
/** Where the ids are written in the module's memory: after the window (at most one id per two bytes). */
const IDS_AT = WINDOW;
/** The second stream's ids (it reads at most the window's second half). */
const IDS_B = IDS_AT + WINDOW * 2;
/**
 * Cells for the counts and the second stream's stop, after the second stream's ids (it reads at most half a window,
 * so at most WINDOW / 4 ids): outside the window, which a run after runTwo may still read up to its end.
 */
const COUNT = IDS_B + WINDOW;
const COUNT_B = COUNT + 4;
const STOP_B = COUNT + 8;
/** From this many bytes on, a window is read as two streams. */
const TWO_STREAMS = 256;
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
const signedCache = new Map<bigint, number[]>();
/** A constant's signed LEB128 bytes (kept: the same constants recur, and BigInt steps are slow before V8 compiles them). */
const signed = (n: bigint): number[] => {
  let out = signedCache.get(n);
  if (out) return out;
  out = [];
  for (let rest = n; ; ) {
    const low = Number(rest & 0x7fn);
    rest >>= 7n;
    if ((rest === 0n && !(low & 0x40)) || (rest === -1n && low & 0x40)) {
      out.push(low);
      break;
    }
    out.push(low | 0x80);
  }
  signedCache.set(n, out);
  return out;
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
/** Code as nested lists of bytes, flattened once. */
type Code = number | readonly Code[];
const flatten = (code: Code[]): number[] => (code as unknown[]).flat(Infinity) as number[];
const bytes8 = (byte: number) => BigInt(byte) * 0x0101010101010101n;

/** The locals one stream of ids keeps: where it reads (AT), where its next id goes (OUT), and three scratch. */
interface Stream { AT: number; OUT: number; N: number; X: number; V: number }

/**
 * One id of a stream: read, checked, stored, AT moved past it and its separator (`sep`: `,` is 1 byte, `, ` 2);
 * anything else leaves the loop (`exit`: its depth from inside the loop) with AT on the id.
 */
function readOne({ AT, OUT, N, X, V }: Stream, sep: 1 | 2, exit: number): Code[] {
  return [
    // X: the eight bytes at AT, each a digit's value when it is one ('0'..'9' xor 0x30 is 0..9).
    op.get(AT), op.load64, op.i64(bytes8(0x30)), op.xor64, op.set(X),
    // N: the digits before the first byte that is none: a byte's top bit is set in ((x & 0x7f) + 0x76) | x
    // exactly when x > 9, so the lowest such bit, by its trailing zeros, says where the digits end (8: none).
    op.get(X), op.i64(bytes8(0x7f)), op.and64, op.i64(bytes8(0x76)), op.add64, op.get(X), op.or64,
    op.i64(bytes8(0x80)), op.and64, op.ctz64, op.wrap, op.i32(3), op.shrU, op.tee(N),
    // No digit, or eight or more: not the plain run.
    op.i32(1), op.sub, op.i32(7), op.geU, op.brIf(exit),
    // A leading zero (JSON has none): left to the byte loop, which rejects it.
    op.get(N), op.i32(1), op.gtU, op.get(X), op.i64(0xffn), op.and64, op.eqz64, op.and, op.brIf(exit),
    // The digits must be followed by a comma (and a space).
    op.get(AT), op.get(N), op.add, op.load8(0), op.i32(0x2c), op.ne, op.brIf(exit),
    (sep === 2 ? [op.get(AT), op.get(N), op.add, op.load8(1), op.i32(0x20), op.ne, op.brIf(exit)] : []),
    // V: the N digits moved to the top bytes (the first, most significant digit lowest, zeros before it), then
    // summed in neighbouring pairs (10a + b), fours (100p + q) and eights (10000p + q): the value in the low 32 bits.
    op.get(X), op.i32(64), op.get(N), op.i32(3), op.shl, op.sub, op.extendU, op.shl64, op.set(V),
    op.get(V), op.i64(10n), op.mul64, op.get(V), op.i64(8n), op.shrU64, op.add64, op.i64(0x00ff00ff00ff00ffn), op.and64, op.set(V),
    op.get(V), op.i64(100n), op.mul64, op.get(V), op.i64(16n), op.shrU64, op.add64, op.i64(0x0000ffff0000ffffn), op.and64, op.set(V),
    op.get(V), op.i64(10000n), op.mul64, op.get(V), op.i64(32n), op.shrU64, op.add64, op.set(V),
    op.get(OUT), op.get(V), op.wrap, op.store32,
    op.get(OUT), op.i32(4), op.add, op.set(OUT),
    op.get(AT), op.get(N), op.add, op.i32(sep), op.add, op.set(AT),
  ];
}

/** Store a count of ids, (OUT - from) / 4, at `cell`. */
const storeCount = (cell: number, OUT: number, from: number): Code[] => [op.i32(cell), op.get(OUT), op.i32(from), op.sub, op.i32(2), op.shrU, op.store32];

/**
 * `run(at, end) → stop`: reads the ids of memory[at, end) while nine bytes are left, writes them from IDS_AT on and
 * their count at COUNT, and returns where it stopped (the first byte of an id, or `at`).
 */
function runFunction(sep: 1 | 2): number[] {
  // Parameters AT, END; then the stream's other locals.
  const stream: Stream = { AT: 0, OUT: 2, N: 3, X: 4, V: 5 };
  const END = 1;
  const body: Code[] = [
    // From here on END is the last place eight bytes and the one after them (the separator's space) can be read
    // (signed: a window shorter than nine bytes is read not at all).
    op.get(END), op.i32(9), op.sub, op.set(END),
    op.i32(IDS_AT), op.set(stream.OUT),
    op.block, op.loop,
    op.get(stream.AT), op.get(END), op.gtS, op.brIf(1),
    readOne(stream, sep, 1),
    op.br(0),
    op.end, op.end,
    storeCount(COUNT, stream.OUT, IDS_AT),
    op.get(stream.AT),
    op.end,
  ];
  return [...list([[2, I32], [2, I64]]), ...flatten(body)];
}

/**
 * `runTwo(a, half, end) → a's stop`: two streams at once, one id of each per turn (ids independent of each other
 * keep the processor busy while the other's load and trailing-zero count are under way): the first over
 * memory[a, half), the second from `half` on. When the second stops first, the first goes on alone up to `half`.
 * The first's ids go from IDS_AT on (count at COUNT), the second's from IDS_B on (count at COUNT_B, where it
 * stopped at STOP_B); they follow the first's only if it stopped at `half`.
 */
function runTwoFunction(sep: 1 | 2): number[] {
  // Parameters A (the first stream's AT), HALF, END; locals: the second's AT, then the streams' others.
  const a: Stream = { AT: 0, OUT: 4, N: 6, X: 8, V: 10 };
  const b: Stream = { AT: 3, OUT: 5, N: 7, X: 9, V: 11 };
  const [HALF, END] = [1, 2];
  const body: Code[] = [
    op.get(END), op.i32(9), op.sub, op.set(END),
    op.get(HALF), op.set(b.AT),
    op.i32(IDS_AT), op.set(a.OUT),
    op.i32(IDS_B), op.set(b.OUT),
    // Depths inside the first loop: 0 the loop, 1 the first alone, 2 done.
    op.block, op.block, op.loop,
    op.get(a.AT), op.get(HALF), op.geU, op.brIf(1),
    op.get(b.AT), op.get(END), op.gtS, op.brIf(1),
    readOne(a, sep, 2),
    readOne(b, sep, 1),
    op.br(0),
    op.end, op.end,
    // Depths inside the second loop: 0 the loop, 1 done.
    op.loop,
    op.get(a.AT), op.get(HALF), op.geU, op.brIf(1),
    readOne(a, sep, 1),
    op.br(0),
    op.end, op.end,
    storeCount(COUNT, a.OUT, IDS_AT),
    storeCount(COUNT_B, b.OUT, IDS_B),
    op.i32(STOP_B), op.get(b.AT), op.store32,
    op.get(a.AT),
    op.end,
  ];
  return [...list([[5, I32], [4, I64]]), ...flatten(body)];
}

/**
 * The module's bytes as the functions above write them. Building them costs 4-10 ms of unoptimized JavaScript at
 * every start (measured), so the module is made from ID_RUN_MODULE, these bytes written out; a test checks that
 * the two are the same (test/unit/rollout-reader.test.ts), and prints the new text when the code here changes.
 */
export function idRunModuleBytes(): Uint8Array {
  const code = [runFunction(1), runFunction(2), runTwoFunction(1), runTwoFunction(2)];
  const pages = Math.ceil((STOP_B + 4) / 65536);
  return new Uint8Array([
    0x00, 0x61, 0x73, 0x6d, 1, 0, 0, 0,
    ...section(1, list([[0x60, ...list([[I32], [I32]]), ...list([[I32]])], [0x60, ...list([[I32], [I32], [I32]]), ...list([[I32]])]])),
    ...section(3, list([[0], [0], [1], [1]])),
    ...section(5, list([[0x00, ...unsigned(pages)]])),
    ...section(7, list([[...name('run1'), 0x00, 0], [...name('run2'), 0x00, 1], [...name('runTwo1'), 0x00, 2], [...name('runTwo2'), 0x00, 3], [...name('memory'), 0x02, 0]])),
    ...section(10, list(code.map((body) => [...unsigned(body.length), ...body]))),
  ]);
}

/** idRunModuleBytes(), in base64. */
export const ID_RUN_MODULE =
  'AGFzbQEAAAABDgJgAn9/AX9gA39/fwF/AwUEAAABAQUDAQADBywFBHJ1bjEAAARydW4yAAEHcnVuVHdvMQACB3J1blR3bzIAAwZt' +
  'ZW1vcnkCAArlDwSBAgICfwJ+IAFBCWshAUGAgAIhAgJAA0AgACABSg0BIAApAABCsODAgYOGjJgwhSEEIARC//79+/fv37//AINC' +
  '9uzZs+fOnbv2AHwgBIRCgIGChIiQoMCAf4N6p0EDdiIDQQFrQQdPDQEgA0EBSyAEQv8Bg1BxDQEgACADai0AAEEsRw0BIARBwAAg' +
  'A0EDdGuthiEFIAVCCn4gBUIIiHxC/4H8h/CfwP8AgyEFIAVC5AB+IAVCEIh8Qv//g4Dw/z+DIQUgBUKQzgB+IAVCIIh8IQUgAiAF' +
  'pzYCACACQQRqIQIgACADakEBaiEADAALC0GAgAggAkGAgAJrQQJ2NgIAIAALjgICAn8CfiABQQlrIQFBgIACIQICQANAIAAgAUoN' +
  'ASAAKQAAQrDgwIGDhoyYMIUhBCAEQv/+/fv379+//wCDQvbs2bPnzp279gB8IASEQoCBgoSIkKDAgH+DeqdBA3YiA0EBa0EHTw0B' +
  'IANBAUsgBEL/AYNQcQ0BIAAgA2otAABBLEcNASAAIANqLQABQSBHDQEgBEHAACADQQN0a62GIQUgBUIKfiAFQgiIfEL/gfyH8J/A' +
  '/wCDIQUgBULkAH4gBUIQiHxC//+DgPD/P4MhBSAFQpDOAH4gBUIgiHwhBSACIAWnNgIAIAJBBGohAiAAIANqQQJqIQAMAAsLQYCA' +
  'CCACQYCAAmtBAnY2AgAgAAvTBQIFfwR+IAJBCWshAiABIQNBgIACIQRBgIAGIQUCQAJAA0AgACABTw0BIAMgAkoNASAAKQAAQrDg' +
  'wIGDhoyYMIUhCCAIQv/+/fv379+//wCDQvbs2bPnzp279gB8IAiEQoCBgoSIkKDAgH+DeqdBA3YiBkEBa0EHTw0CIAZBAUsgCEL/' +
  'AYNQcQ0CIAAgBmotAABBLEcNAiAIQcAAIAZBA3RrrYYhCiAKQgp+IApCCIh8Qv+B/Ifwn8D/AIMhCiAKQuQAfiAKQhCIfEL//4OA' +
  '8P8/gyEKIApCkM4AfiAKQiCIfCEKIAQgCqc2AgAgBEEEaiEEIAAgBmpBAWohACADKQAAQrDgwIGDhoyYMIUhCSAJQv/+/fv379+/' +
  '/wCDQvbs2bPnzp279gB8IAmEQoCBgoSIkKDAgH+DeqdBA3YiB0EBa0EHTw0BIAdBAUsgCUL/AYNQcQ0BIAMgB2otAABBLEcNASAJ' +
  'QcAAIAdBA3RrrYYhCyALQgp+IAtCCIh8Qv+B/Ifwn8D/AIMhCyALQuQAfiALQhCIfEL//4OA8P8/gyELIAtCkM4AfiALQiCIfCEL' +
  'IAUgC6c2AgAgBUEEaiEFIAMgB2pBAWohAwwACwsDQCAAIAFPDQEgACkAAEKw4MCBg4aMmDCFIQggCEL//v379+/fv/8Ag0L27Nmz' +
  '586du/YAfCAIhEKAgYKEiJCgwIB/g3qnQQN2IgZBAWtBB08NASAGQQFLIAhC/wGDUHENASAAIAZqLQAAQSxHDQEgCEHAACAGQQN0' +
  'a62GIQogCkIKfiAKQgiIfEL/gfyH8J/A/wCDIQogCkLkAH4gCkIQiHxC//+DgPD/P4MhCiAKQpDOAH4gCkIgiHwhCiAEIAqnNgIA' +
  'IARBBGohBCAAIAZqQQFqIQAMAAsLQYCACCAEQYCAAmtBAnY2AgBBhIAIIAVBgIAGa0ECdjYCAEGIgAggAzYCACAAC/oFAgV/BH4g' +
  'AkEJayECIAEhA0GAgAIhBEGAgAYhBQJAAkADQCAAIAFPDQEgAyACSg0BIAApAABCsODAgYOGjJgwhSEIIAhC//79+/fv37//AINC' +
  '9uzZs+fOnbv2AHwgCIRCgIGChIiQoMCAf4N6p0EDdiIGQQFrQQdPDQIgBkEBSyAIQv8Bg1BxDQIgACAGai0AAEEsRw0CIAAgBmot' +
  'AAFBIEcNAiAIQcAAIAZBA3RrrYYhCiAKQgp+IApCCIh8Qv+B/Ifwn8D/AIMhCiAKQuQAfiAKQhCIfEL//4OA8P8/gyEKIApCkM4A' +
  'fiAKQiCIfCEKIAQgCqc2AgAgBEEEaiEEIAAgBmpBAmohACADKQAAQrDgwIGDhoyYMIUhCSAJQv/+/fv379+//wCDQvbs2bPnzp27' +
  '9gB8IAmEQoCBgoSIkKDAgH+DeqdBA3YiB0EBa0EHTw0BIAdBAUsgCUL/AYNQcQ0BIAMgB2otAABBLEcNASADIAdqLQABQSBHDQEg' +
  'CUHAACAHQQN0a62GIQsgC0IKfiALQgiIfEL/gfyH8J/A/wCDIQsgC0LkAH4gC0IQiHxC//+DgPD/P4MhCyALQpDOAH4gC0IgiHwh' +
  'CyAFIAunNgIAIAVBBGohBSADIAdqQQJqIQMMAAsLA0AgACABTw0BIAApAABCsODAgYOGjJgwhSEIIAhC//79+/fv37//AINC9uzZ' +
  's+fOnbv2AHwgCIRCgIGChIiQoMCAf4N6p0EDdiIGQQFrQQdPDQEgBkEBSyAIQv8Bg1BxDQEgACAGai0AAEEsRw0BIAAgBmotAAFB' +
  'IEcNASAIQcAAIAZBA3RrrYYhCiAKQgp+IApCCIh8Qv+B/Ifwn8D/AIMhCiAKQuQAfiAKQhCIfEL//4OA8P8/gyEKIApCkM4AfiAK' +
  'QiCIfCEKIAQgCqc2AgAgBEEEaiEEIAAgBmpBAmohAAwACwtBgIAIIARBgIACa0ECdjYCAEGEgAggBUGAgAZrQQJ2NgIAQYiACCAD' +
  'NgIAIAAL';

type Run = (at: number, end: number) => number;
type RunTwo = (a: number, half: number, end: number) => number;
interface Runner { run1: Run; run2: Run; runTwo1: RunTwo; runTwo2: RunTwo; bytes: Uint8Array; ids: Uint32Array }

/** The part of the WebAssembly API used here (its types are the DOM library's, which this project does not load). */
interface WasmApi {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => { exports: { run1: Run; run2: Run; runTwo1: RunTwo; runTwo2: RunTwo; memory: { buffer: ArrayBuffer } } };
}

let runner: Runner | null | undefined;

/** The module, made on first use; null where WebAssembly cannot run (`node --jitless`): the byte loop reads it all. */
function getRunner(): Runner | null {
  if (runner !== undefined) return runner;
  try {
    const api = (globalThis as { WebAssembly?: WasmApi }).WebAssembly!;
    const { exports } = new api.Instance(new api.Module(Buffer.from(ID_RUN_MODULE, 'base64')), {});
    runner = { ...exports, bytes: new Uint8Array(exports.memory.buffer), ids: new Uint32Array(exports.memory.buffer) };
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

/** The ids the module wrote from `from` on (their count at `cell`) appended to `ids` at `count`: the new count. */
function copyIds(out: Uint32Array, cell: number, from: number, ids: Uint32Array, count: number): number {
  const got = out[cell >> 2];
  ids.set(new Uint32Array(out.buffer, from, got), count);
  return count + got;
}

/** The first comma in `bytes` from `at` on, or -1 (a loop: the comma is a few bytes on, nearer than a call to indexOf). */
function nextComma(bytes: Uint8Array, at: number): number {
  const end = bytes.length;
  while (at < end && bytes[at] !== 0x2c) at++;
  return at < end ? at : -1;
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
  const comma = nextComma(bytes, at);
  if (comma < 0) return;
  const wasm = getRunner();
  if (wasm === null) return;
  const sep = bytes[comma + 1] === 0x20 ? 2 : 1;
  const run = sep === 2 ? wasm.run2 : wasm.run1;
  const runTwo = sep === 2 ? wasm.runTwo2 : wasm.runTwo1;
  const out = wasm.ids;
  for (;;) {
    const n = Math.min(WINDOW, end - at);
    wasm.bytes.set(new Uint8Array(bytes.buffer, bytes.byteOffset + at, n));
    let from = 0;
    if (n >= TWO_STREAMS) {
      // The second stream starts after a separator half way; its ids count only if the first reads up to it
      // exactly (then every byte before it was ids and separators, so it starts an id of the same array).
      const half = nextComma(bytes, at + (n >> 1)) - at + sep;
      if (half > sep && half < n) {
        from = runTwo(0, half, n);
        count = copyIds(out, COUNT, IDS_AT, ids, count);
        if (from === half) {
          count = copyIds(out, COUNT_B, IDS_B, ids, count);
          from = out[STOP_B >> 2];
        }
      }
    }
    const stop = run(from, n);
    count = copyIds(out, COUNT, IDS_AT, ids, count);
    at += stop;
    // Stopped inside the window (not at its last nine bytes), or the window held the rest of the line: done.
    if (stop + 9 <= n || n < WINDOW) break;
  }
  idRun.at = at;
  idRun.count = count;
}
