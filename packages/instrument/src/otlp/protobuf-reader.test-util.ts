/** A protobuf reader, for checking what encoded bytes say without trusting the encoder's own code. */
import type { HrTime } from '@opentelemetry/api';
import { expect } from 'vitest';

export type Message = Map<number, (bigint | Uint8Array)[]>;

/** The fields of one message: varints and fixed-width values as bigint, length-delimited as bytes. */
export function decode(bytes: Uint8Array): Message {
  const fields: Message = new Map();
  let p = 0;
  const varint = () => {
    let v = 0n;
    for (let shift = 0n; ; shift += 7n) {
      const b = bytes[p++]!;
      v |= BigInt(b & 0x7f) << shift;
      if (b < 0x80) return v;
    }
  };
  const fixed = (n: number) => {
    let v = 0n;
    for (let i = n - 1; i >= 0; i--) v = (v << 8n) | BigInt(bytes[p + i]!);
    p += n;
    return v;
  };
  while (p < bytes.length) {
    const tag = Number(varint());
    const wire = tag & 7;
    let value: bigint | Uint8Array;
    if (wire === 0) value = varint();
    else if (wire === 1) value = fixed(8);
    else if (wire === 5) value = fixed(4);
    else if (wire === 2) {
      const length = Number(varint());
      value = bytes.subarray(p, p + length);
      p += length;
    } else throw new Error(`wire type ${wire} at ${p}`);
    const list = fields.get(tag >>> 3) ?? [];
    list.push(value);
    fields.set(tag >>> 3, list);
  }
  expect(p).toBe(bytes.length);
  return fields;
}

export const all = (m: Message, field: number) => m.get(field) ?? [];
export const bytesOf = (m: Message, field: number) => all(m, field)[0] as Uint8Array | undefined;
export const textOf = (m: Message, field: number) => Buffer.from(bytesOf(m, field) ?? []).toString('utf8');
export const numberOf = (m: Message, field: number) => all(m, field)[0] as bigint | undefined;

function anyValue(m: Message): unknown {
  if (m.has(1)) return textOf(m, 1);
  if (m.has(2)) return numberOf(m, 2) === 1n;
  if (m.has(3)) return Number(BigInt.asIntN(64, numberOf(m, 3)!));
  if (m.has(4))
    return Buffer.from(
      BigInt.asUintN(64, numberOf(m, 4)!).toString(16).padStart(16, '0'),
      'hex',
    ).readDoubleBE();
  if (m.has(5)) return all(decode(bytesOf(m, 5)!), 1).map((v) => anyValue(decode(v as Uint8Array)));
  if (m.has(6)) return keyValues(decode(bytesOf(m, 6)!), 1);
  if (m.has(7)) return Uint8Array.from(bytesOf(m, 7)!);
  return undefined;
}

export function keyValues(m: Message, field: number): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const kv of all(m, field)) {
    const pair = decode(kv as Uint8Array);
    out[textOf(pair, 1)] = anyValue(decode(bytesOf(pair, 2) ?? new Uint8Array()));
  }
  return out;
}

export const nanos = (t: HrTime) => BigInt(t[0]) * 1_000_000_000n + BigInt(t[1]);
export const hex = (b: Uint8Array | undefined) => Buffer.from(b ?? []).toString('hex');
