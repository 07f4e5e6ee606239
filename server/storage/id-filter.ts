// A set of op ids that may answer "maybe" but never misses one it was given: a Bloom filter that grows.

/**
 * Bits per id in each layer, and hashes per id: about one false "maybe" in 100,000 ids. Each false
 * "maybe" sends a push the careful way, through the database, and holds the pushes behind it; with 10
 * bits and 7 hashes it was one in 1,000-2,000, several per 10,000 pushes, and they made the slowest acks.
 */
const BITS_PER_ID = 24;
const HASHES = 12;

/** Two 32-bit FNV-1a hashes of `id` with different offsets, for double hashing. */
function hashes(id: string): [number, number] {
  let a = 0x811c9dc5;
  let b = 0x01000193 ^ 0x5bd1e995;
  for (let i = 0; i < id.length; i++) {
    const c = id.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x01000193) ^ (b >>> 15);
  }
  // An odd step visits every bit position of a power-of-two table.
  return [a >>> 0, (b | 1) >>> 0];
}

class Layer {
  private readonly bits: Uint32Array;
  private readonly mask: number;
  count = 0;

  constructor(readonly capacity: number) {
    let size = 32;
    while (size < capacity * BITS_PER_ID) size *= 2;
    this.bits = new Uint32Array(size / 32);
    this.mask = size - 1;
  }

  add(h1: number, h2: number): void {
    for (let i = 0; i < HASHES; i++) {
      const bit = (h1 + Math.imul(i, h2)) & this.mask;
      this.bits[bit >>> 5]! |= 1 << (bit & 31);
    }
    this.count += 1;
  }

  get bytes(): number {
    return this.bits.byteLength;
  }

  has(h1: number, h2: number): boolean {
    for (let i = 0; i < HASHES; i++) {
      const bit = (h1 + Math.imul(i, h2)) & this.mask;
      if ((this.bits[bit >>> 5]! & (1 << (bit & 31))) === 0) return false;
    }
    return true;
  }
}

/**
 * The ids of one stream, for the relay's question "could this op be stored already?". `has` is false
 * only for an id never added; true may be wrong (rarely, see BITS_PER_ID), and the caller then asks the
 * database. It grows by layers of twice the size, so it never needs the ids again; a stream of a million
 * ops takes 3-6 MB.
 */
export class IdFilter {
  private readonly layers: Layer[];

  constructor(expected = 0) {
    this.layers = [new Layer(Math.max(4_096, expected * 2))];
  }

  add(id: string): void {
    let top = this.layers[this.layers.length - 1]!;
    if (top.count >= top.capacity) this.layers.push((top = new Layer(top.capacity * 2)));
    const [h1, h2] = hashes(id);
    top.add(h1, h2);
  }

  has(id: string): boolean {
    const [h1, h2] = hashes(id);
    return this.layers.some((layer) => layer.has(h1, h2));
  }

  /** Bytes of its bit tables. */
  get bytes(): number {
    return this.layers.reduce((n, l) => n + l.bytes, 0);
  }
}
