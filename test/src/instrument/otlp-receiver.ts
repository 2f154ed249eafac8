/**
 * A small, real OTLP/HTTP receiver for process-level tests: it accepts `application/json` and
 * `application/x-protobuf` bodies on /v1/traces, /v1/logs and /v1/metrics, decodes the fields the
 * tests assert on, and answers like a collector does (200 with an empty Export*ServiceResponse in
 * the request's encoding).
 */
import { type IncomingMessage, type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';

export type Value = string | number | boolean | null | Value[] | { [key: string]: Value };

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  name: string;
  /** OTLP enum: 1 internal, 2 server, 3 client. */
  kind: number;
  attributes: Record<string, Value>;
  eventNames: string[];
  resource: Record<string, Value>;
}

export interface ReceivedLog {
  traceId: string | undefined;
  spanId: string | undefined;
  severityText: string | undefined;
  body: Value;
  attributes: Record<string, Value>;
  scope: string;
}

export interface OtlpReceiver {
  url: string;
  spans: ReceivedSpan[];
  logs: ReceivedLog[];
  /** Content-Type of every request, per path. */
  contentTypes: Map<string, Set<string>>;
  requests: number;
  /** Polls until `predicate` holds or `timeoutMs` passes (then throws with what arrived). */
  waitFor<T>(what: string, probe: () => T | undefined | false, timeoutMs?: number): Promise<T>;
  close(): Promise<void>;
}

// ---- protobuf (just the wire format and the OTLP fields the tests need) -----------------------

class Reader {
  pos = 0;
  constructor(readonly buf: Buffer) {}
  get done(): boolean {
    return this.pos >= this.buf.length;
  }
  varint(): number {
    let result = 0;
    let shift = 0;
    for (;;) {
      const byte = this.buf[this.pos++];
      if (byte === undefined) throw new Error('truncated varint');
      result += (byte & 0x7f) * 2 ** shift;
      if ((byte & 0x80) === 0) return result;
      shift += 7;
    }
  }
  bytes(): Buffer {
    const len = this.varint();
    const out = this.buf.subarray(this.pos, this.pos + len);
    this.pos += len;
    return out;
  }
  skip(wire: number): void {
    if (wire === 0) this.varint();
    else if (wire === 1) this.pos += 8;
    else if (wire === 2) this.bytes();
    else if (wire === 5) this.pos += 4;
    else throw new Error(`unsupported wire type ${wire}`);
  }
  /** Iterates fields as [fieldNumber, wireType]; the callback must consume the value or return false. */
  fields(onField: (field: number, wire: number) => boolean): void {
    while (!this.done) {
      const tag = this.varint();
      const field = Math.floor(tag / 8);
      const wire = tag & 7;
      if (!onField(field, wire)) this.skip(wire);
    }
  }
}

function pbAnyValue(buf: Buffer): Value {
  let value: Value = null;
  const r = new Reader(buf);
  r.fields((field, wire) => {
    if (field === 1 && wire === 2) value = r.bytes().toString('utf8');
    else if (field === 2 && wire === 0) value = r.varint() !== 0;
    else if (field === 3 && wire === 0) value = r.varint();
    else if (field === 4 && wire === 1) {
      value = r.buf.readDoubleLE(r.pos);
      r.pos += 8;
    } else if (field === 5 && wire === 2) {
      const arr: Value[] = [];
      const a = new Reader(r.bytes());
      a.fields((f, w) => (f === 1 && w === 2 ? (arr.push(pbAnyValue(a.bytes())), true) : false));
      value = arr;
    } else return false;
    return true;
  });
  return value;
}

function pbKeyValue(buf: Buffer): [string, Value] {
  let key = '';
  let value: Value = null;
  const r = new Reader(buf);
  r.fields((field, wire) => {
    if (field === 1 && wire === 2) key = r.bytes().toString('utf8');
    else if (field === 2 && wire === 2) value = pbAnyValue(r.bytes());
    else return false;
    return true;
  });
  return [key, value];
}

/** Walks resource_* (1) → scope_* (2) → records (2), handing each record's bytes to `onRecord`. */
function pbWalk(
  buf: Buffer,
  onRecord: (record: Buffer, resource: Record<string, Value>, scope: string) => void,
): void {
  const top = new Reader(buf);
  top.fields((field, wire) => {
    if (field !== 1 || wire !== 2) return false;
    const rs = new Reader(top.bytes());
    const resource: Record<string, Value> = {};
    const scopes: Buffer[] = [];
    rs.fields((f, w) => {
      if (f === 1 && w === 2) {
        const res = new Reader(rs.bytes());
        res.fields((rf, rw) => {
          if (rf !== 1 || rw !== 2) return false;
          const [k, v] = pbKeyValue(res.bytes());
          resource[k] = v;
          return true;
        });
      } else if (f === 2 && w === 2) scopes.push(rs.bytes());
      else return false;
      return true;
    });
    for (const s of scopes) {
      const sr = new Reader(s);
      let scope = '';
      sr.fields((f, w) => {
        if (f === 1 && w === 2) {
          const sc = new Reader(sr.bytes());
          sc.fields((cf, cw) =>
            cf === 1 && cw === 2 ? ((scope = sc.bytes().toString('utf8')), true) : false,
          );
        } else if (f === 2 && w === 2) onRecord(sr.bytes(), resource, scope);
        else return false;
        return true;
      });
    }
    return true;
  });
}

function decodeSpansProtobuf(buf: Buffer): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  pbWalk(buf, (bytes, resource) => {
    const span: ReceivedSpan = {
      traceId: '',
      spanId: '',
      parentSpanId: undefined,
      name: '',
      kind: 0,
      attributes: {},
      eventNames: [],
      resource,
    };
    const r = new Reader(bytes);
    r.fields((field, wire) => {
      if (field === 1 && wire === 2) span.traceId = r.bytes().toString('hex');
      else if (field === 2 && wire === 2) span.spanId = r.bytes().toString('hex');
      else if (field === 4 && wire === 2) {
        const p = r.bytes().toString('hex');
        span.parentSpanId = p === '' ? undefined : p;
      } else if (field === 5 && wire === 2) span.name = r.bytes().toString('utf8');
      else if (field === 6 && wire === 0) span.kind = r.varint();
      else if (field === 9 && wire === 2) {
        const [k, v] = pbKeyValue(r.bytes());
        span.attributes[k] = v;
      } else if (field === 11 && wire === 2) {
        const ev = new Reader(r.bytes());
        ev.fields((f, w) =>
          f === 2 && w === 2 ? (span.eventNames.push(ev.bytes().toString('utf8')), true) : false,
        );
      } else return false;
      return true;
    });
    out.push(span);
  });
  return out;
}

function decodeLogsProtobuf(buf: Buffer): ReceivedLog[] {
  const out: ReceivedLog[] = [];
  pbWalk(buf, (bytes, _resource, scope) => {
    const log: ReceivedLog = {
      traceId: undefined,
      spanId: undefined,
      severityText: undefined,
      body: null,
      attributes: {},
      scope,
    };
    const r = new Reader(bytes);
    r.fields((field, wire) => {
      if (field === 3 && wire === 2) log.severityText = r.bytes().toString('utf8');
      else if (field === 5 && wire === 2) log.body = pbAnyValue(r.bytes());
      else if (field === 6 && wire === 2) {
        const [k, v] = pbKeyValue(r.bytes());
        log.attributes[k] = v;
      } else if (field === 9 && wire === 2) log.traceId = r.bytes().toString('hex') || undefined;
      else if (field === 10 && wire === 2) log.spanId = r.bytes().toString('hex') || undefined;
      else return false;
      return true;
    });
    out.push(log);
  });
  return out;
}

// ---- JSON -------------------------------------------------------------------------------------

interface JsonKeyValue {
  key: string;
  value?: JsonAnyValue;
}
interface JsonAnyValue {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: string | number;
  doubleValue?: number;
  arrayValue?: { values?: JsonAnyValue[] };
}

function jsonAnyValue(v: JsonAnyValue | undefined): Value {
  if (v === undefined) return null;
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.arrayValue !== undefined) return (v.arrayValue.values ?? []).map(jsonAnyValue);
  return null;
}

function jsonAttributes(list: JsonKeyValue[] | undefined): Record<string, Value> {
  const out: Record<string, Value> = {};
  for (const kv of list ?? []) out[kv.key] = jsonAnyValue(kv.value);
  return out;
}

interface JsonEnvelope {
  resource?: { attributes?: JsonKeyValue[] };
  scope?: { name?: string };
  [key: string]: unknown;
}

function jsonWalk<R>(
  body: Record<string, unknown>,
  outer: string,
  inner: string,
  records: string,
  onRecord: (record: R, resource: Record<string, Value>, scope: string) => void,
): void {
  for (const rs of (body[outer] ?? []) as JsonEnvelope[]) {
    const resource = jsonAttributes(rs.resource?.attributes);
    for (const ss of (rs[inner] ?? []) as JsonEnvelope[]) {
      for (const rec of (ss[records] ?? []) as R[]) onRecord(rec, resource, ss.scope?.name ?? '');
    }
  }
}

function decodeSpansJson(body: Record<string, unknown>): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  jsonWalk<Record<string, unknown>>(body, 'resourceSpans', 'scopeSpans', 'spans', (s, resource) => {
    out.push({
      traceId: String(s.traceId),
      spanId: String(s.spanId),
      parentSpanId: typeof s.parentSpanId === 'string' && s.parentSpanId !== '' ? s.parentSpanId : undefined,
      name: String(s.name),
      kind: Number(s.kind),
      attributes: jsonAttributes(s.attributes as JsonKeyValue[]),
      eventNames: ((s.events ?? []) as { name: string }[]).map((e) => e.name),
      resource,
    });
  });
  return out;
}

function decodeLogsJson(body: Record<string, unknown>): ReceivedLog[] {
  const out: ReceivedLog[] = [];
  jsonWalk<Record<string, unknown>>(body, 'resourceLogs', 'scopeLogs', 'logRecords', (l, _r, scope) => {
    out.push({
      traceId: typeof l.traceId === 'string' && l.traceId !== '' ? l.traceId : undefined,
      spanId: typeof l.spanId === 'string' && l.spanId !== '' ? l.spanId : undefined,
      severityText: l.severityText as string | undefined,
      body: jsonAnyValue(l.body as JsonAnyValue),
      attributes: jsonAttributes(l.attributes as JsonKeyValue[]),
      scope,
    });
  });
  return out;
}

// ---- server -----------------------------------------------------------------------------------

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const raw = Buffer.concat(chunks);
  return req.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw;
}

/** Starts a receiver on 127.0.0.1, port 0. */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const logs: ReceivedLog[] = [];
  const contentTypes = new Map<string, Set<string>>();
  let requests = 0;
  const server: Server = createServer((req, res) => {
    void (async () => {
      const path = req.url ?? '';
      const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim();
      requests++;
      if (!contentTypes.has(path)) contentTypes.set(path, new Set());
      contentTypes.get(path)!.add(type);
      try {
        const body = await readBody(req);
        const json = type === 'application/json';
        if (path === '/v1/traces') {
          spans.push(
            ...(json ? decodeSpansJson(JSON.parse(body.toString('utf8'))) : decodeSpansProtobuf(body)),
          );
        } else if (path === '/v1/logs') {
          logs.push(...(json ? decodeLogsJson(JSON.parse(body.toString('utf8'))) : decodeLogsProtobuf(body)));
        } else if (path !== '/v1/metrics') {
          res.writeHead(404).end();
          return;
        }
        res.writeHead(200, { 'content-type': json ? 'application/json' : 'application/x-protobuf' });
        res.end(json ? '{}' : Buffer.alloc(0));
      } catch (error) {
        res.writeHead(400, { 'content-type': 'text/plain' }).end(String(error));
      }
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    logs,
    contentTypes,
    get requests() {
      return requests;
    },
    async waitFor(what, probe, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const result = probe();
        if (result !== undefined && result !== false) return result;
        if (Date.now() > deadline) {
          throw new Error(
            `timed out waiting for ${what}; got ${spans.length} spans (${spans.map((s) => s.name).join(', ')}) and ${logs.length} logs`,
          );
        }
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
