/**
 * The one file format of the tokenizer caches (the byte table, the encoder's merges): a 4-byte header length, a
 * JSON header (the format, the digest of the source it was built from, the cache's own fields and the SHA-256 of
 * the payload), padding to 4 bytes, then the payload's arrays back to back.
 *
 * Written through the output writer (an exclusively created temporary file, renamed into place), never through a
 * link, a FIFO or a device planted under the name. The digests prove a file intact, not honest: whoever can write
 * the cache can forge both, so only a regular file this user owns, that nobody else may write, is read (the
 * README: a shared cache is trusted). Any problem, either way, means "no cache": the cache only saves time.
 */
import { createHash } from 'node:crypto';
import { existsSync, lstatSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { JsonlWriter } from '../io/jsonl.ts';

const digestOf = (parts: Uint8Array[]) => parts.reduce((hash, part) => hash.update(part), createHash('sha256')).digest('hex');

/** The bytes of a typed array, as they lie in memory. */
export const bytesOf = (array: Int32Array | Uint32Array | Uint8Array): Uint8Array => new Uint8Array(array.buffer, array.byteOffset, array.byteLength);

export function writeCacheFile(file: string, header: { format: string; source: string } & Record<string, unknown>, payload: Uint8Array[]): void {
  try {
    mkdirSync(dirname(file), { recursive: true });
    const existing = lstatSync(file, { throwIfNoEntry: false });
    if (existing && !existing.isFile()) return;
    const head = Buffer.from(JSON.stringify({ ...header, payload: digestOf(payload) }));
    const headLength = Buffer.alloc(4);
    headLength.writeUInt32LE(head.length);
    const pad = Buffer.alloc((4 - ((4 + head.length) % 4)) % 4);
    const writer = new JsonlWriter(file, { flag: 'cache', gzip: false, mode: 0o644 });
    try {
      for (const part of [headLength, head, pad, ...payload]) writer.writeBytes(part);
      writer.close();
    } catch (error) {
      writer.abort();
      throw error;
    }
  } catch {
    // A read-only home is no reason to fail.
  }
}

/** A cache file's payload, taken array by array in the order it was written. Taking past its end throws. */
export class CachePayload {
  private at = 0;
  constructor(readonly header: Record<string, unknown>, private readonly payload: Buffer) {}

  /** The next `count` bytes, a view of the bytes read (a copy is fresh memory, slow to touch on some VMs). */
  bytes(count: number): Uint8Array {
    if (!(Number.isSafeInteger(count) && count >= 0) || this.at + count > this.payload.length) throw new Error('cache payload too short');
    const part = new Uint8Array(this.payload.buffer, this.payload.byteOffset + this.at, count);
    this.at += count;
    return part;
  }

  /** The next `count` 4-byte values: a view where the bytes read leave them aligned, else a copy. */
  int32(count: number): Int32Array {
    const part = this.bytes(count * 4);
    return part.byteOffset % 4 === 0 ? new Int32Array(part.buffer, part.byteOffset, count) : new Int32Array(part.slice().buffer);
  }

  uint32(count: number): Uint32Array {
    const part = this.bytes(count * 4);
    return part.byteOffset % 4 === 0 ? new Uint32Array(part.buffer, part.byteOffset, count) : new Uint32Array(part.slice().buffer);
  }

  /** Has every byte been taken? A file longer than its header says is not the file that was written. */
  get done(): boolean { return this.at === this.payload.length; }
}

/**
 * The payload of `file` when it is a trusted cache file of `format` built from `source` and intact (its payload's
 * digest is the header's); else undefined.
 */
export function readCacheFile(file: string, format: string, source: string): CachePayload | undefined {
  if (!existsSync(file)) return undefined;
  try {
    const stat = lstatSync(file);
    if (!stat.isFile() || (process.getuid && stat.uid !== process.getuid()) || (stat.mode & 0o022) !== 0) return undefined;
    const buffer = readFileSync(file);
    const headLength = buffer.readUInt32LE(0);
    const header = JSON.parse(buffer.subarray(4, 4 + headLength).toString('utf8')) as Record<string, unknown>;
    if (header.format !== format || header.source !== source) return undefined;
    let at = 4 + headLength;
    at += (4 - (at % 4)) % 4;
    if (at > buffer.length) return undefined;
    const payload = buffer.subarray(at);
    // The writer hashed the arrays one after the other: the same digest as the bytes that follow the header.
    if (digestOf([payload]) !== header.payload) return undefined;
    return new CachePayload(header, payload);
  } catch {
    return undefined;
  }
}
