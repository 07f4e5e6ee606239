// File sizes for PGlite's Node file system, kept in memory instead of asked of the kernel at every seek.
//
// PostgreSQL learns how long a relation is by seeking to the end of its file, and it does so for the table
// and every index of it whenever it plans a statement (a table with eight indexes: nine seeks per query).
// Emscripten's NODEFS answers each seek to the end with an fstat system call. On a virtual machine where a
// system call costs a microsecond or more, that was a tenth of a store's query time and some 5-8% of the
// relay's database thread. The process that opened a PGlite data folder is the only one that writes to it
// (its lock says so), and every change of a file's size goes through this file system: a write, a
// truncate, an open that truncates. So a size, once read, is kept by those calls and read again after any
// change this code does not follow exactly.
import { fstatSync } from 'node:fs';

/** The parts of an Emscripten file-system node and stream this code reads. */
type FsNode = { mode: number };
type FsStream = { node: FsNode; nfd: number };
type StreamOps = {
  open(stream: FsStream): void;
  llseek(stream: FsStream, offset: number, whence: number): number;
  write(stream: FsStream, buffer: Uint8Array, offset: number, length: number, position: number): number;
  setattr?(stream: FsStream, attr: { size?: number }): void;
};
type NodeOps = { setattr(node: FsNode, attr: { size?: number }): void };
type Fs = { isFile(mode: number): boolean; ErrnoError: new (errno: number) => Error };

/** What the PGlite instance exposes: its Emscripten module, with NODEFS where the data folder is mounted. */
export type PgliteModule = { Module: { FS: Fs; NODEFS?: { stream_ops: StreamOps; node_ops: NodeOps } } };

const SEEK_END = 2;
const EINVAL = 28;
const patched = new WeakSet<object>();

/**
 * Makes `pg`'s NODEFS keep each file's size once it was first read, following writes and truncations.
 * An instance with no NODEFS (an in-memory database) is left as it is.
 */
export function cacheFileSizes(pg: PgliteModule): void {
  const nodefs = pg.Module.NODEFS;
  const fs = pg.Module.FS;
  if (nodefs === undefined || patched.has(nodefs)) return;
  patched.add(nodefs);
  const sizes = new WeakMap<FsNode, number>();
  const stream = nodefs.stream_ops;
  const node = nodefs.node_ops;
  const { open, llseek, write } = stream;
  const streamSetattr = stream.setattr;
  const nodeSetattr = node.setattr;

  stream.open = (s) => {
    // An open may truncate (O_TRUNC), and a file may have been made anew under the same node.
    sizes.delete(s.node);
    open(s);
  };
  stream.llseek = (s, offset, whence) => {
    if (whence !== SEEK_END || !fs.isFile(s.node.mode)) return llseek(s, offset, whence);
    let size = sizes.get(s.node);
    if (size === undefined) {
      size = fstatSync(s.nfd).size;
      sizes.set(s.node, size);
    }
    const at = offset + size;
    if (at < 0) throw new fs.ErrnoError(EINVAL);
    return at;
  };
  stream.write = (s, buffer, offset, length, position) => {
    const written = write(s, buffer, offset, length, position);
    const size = sizes.get(s.node);
    if (size !== undefined) {
      if (typeof position === 'number' && Number.isSafeInteger(position)) sizes.set(s.node, Math.max(size, position + written));
      else sizes.delete(s.node);
    }
    return written;
  };
  if (streamSetattr !== undefined) {
    stream.setattr = (s, attr) => {
      sizes.delete(s.node);
      streamSetattr(s, attr);
    };
  }
  node.setattr = (n, attr) => {
    sizes.delete(n);
    nodeSetattr(n, attr);
  };
}
