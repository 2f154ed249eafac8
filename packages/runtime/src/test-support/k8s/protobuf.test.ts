// kubectl v1.32 sends the built-in kinds its `create` generators make as
// application/vnd.kubernetes.protobuf and does not fall back to JSON: the test API server decodes
// them. Each object kubectl creates that way reads back as the JSON kubectl meant (its
// --dry-run=client output) and as its twin created from that JSON; `kubectl apply -k deploy/k8s/`
// reads back as `kubectl kustomize` renders it; malformed protobuf is refused with 415.
import { execFile } from 'node:child_process';
import { request } from 'node:http';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type KubeApiServer, startKubeApiServer } from './api-server.js';
import { writeKubeconfig } from './kubeconfig.js';

const REPO = resolve(fileURLToPath(import.meta.url), '../../../../../..');

let api: KubeApiServer;
let kubeconfig: string;

function kubectl(args: string[], input?: string): Promise<{ stdout: string; stderr: string }> {
  return new Promise((done, fail) => {
    const child = execFile(
      'kubectl',
      args,
      { env: { ...process.env, KUBECONFIG: kubeconfig }, timeout: 60_000, cwd: REPO, maxBuffer: 1 << 24 },
      (error, stdout, stderr) =>
        error ? fail(new Error(`kubectl ${args.join(' ')}: ${stderr}`)) : done({ stdout, stderr }),
    );
    child.stdin?.end(input ?? '');
  });
}

type Json = Record<string, unknown>;

/** The object without what the server sets (identity, times, status) or kubectl adds on apply. */
function comparable(object: Json): Json {
  const { status: _status, ...rest } = object;
  const metadata = { ...(rest.metadata as Json) };
  for (const key of [
    'uid',
    'resourceVersion',
    'creationTimestamp',
    'generation',
    'managedFields',
    'namespace',
  ])
    delete metadata[key];
  const annotations = { ...(metadata.annotations as Json | undefined) };
  delete annotations['kubectl.kubernetes.io/last-applied-configuration'];
  if (Object.keys(annotations).length > 0) metadata.annotations = annotations;
  else delete metadata.annotations;
  return { ...rest, metadata };
}

const GENERATORS: { kind: string; name: string; args: string[] }[] = [
  { kind: 'namespace', name: 'pb-ns', args: ['namespace', 'pb-ns'] },
  {
    kind: 'configmap',
    name: 'pb-cm',
    args: ['configmap', 'pb-cm', '--from-literal=a=b', '--from-literal=z=é ü'],
  },
  {
    kind: 'secret',
    name: 'pb-secret',
    args: ['secret', 'generic', 'pb-secret', '--from-literal=token=s3cr\u00e9t'],
  },
  { kind: 'serviceaccount', name: 'pb-sa', args: ['serviceaccount', 'pb-sa'] },
  {
    kind: 'role',
    name: 'pb-role',
    args: ['role', 'pb-role', '--verb=get,list', '--resource=pods,configmaps'],
  },
  {
    kind: 'rolebinding',
    name: 'pb-rb',
    args: ['rolebinding', 'pb-rb', '--role=pb-role', '--serviceaccount=default:pb-sa', '--user=alice'],
  },
  {
    kind: 'service',
    name: 'pb-svc',
    args: ['service', 'clusterip', 'pb-svc', '--tcp=80:8080', '--tcp=443:https'],
  },
  {
    kind: 'deployment',
    name: 'pb-deploy',
    args: [
      'deployment',
      'pb-deploy',
      '--image=file:///nowhere',
      '--port=8080',
      '--replicas=0',
      '--',
      'serve',
      '-x',
    ],
  },
  {
    kind: 'resourcequota',
    name: 'pb-quota',
    args: ['quota', 'pb-quota', '--hard=pods=2,cpu=1500m,memory=1Gi'],
  },
  {
    kind: 'poddisruptionbudget',
    name: 'pb-pdb',
    args: ['poddisruptionbudget', 'pb-pdb', '--selector=app=x', '--max-unavailable=25%'],
  },
];

beforeAll(async () => {
  api = await startKubeApiServer();
  kubeconfig = writeKubeconfig(api.url);
  await kubectl(['create', 'namespace', 'json-twins']);
});

afterAll(async () => {
  await api?.close();
});

describe('protobuf request bodies (kubectl v1.32)', () => {
  it.each(GENERATORS)('kubectl create $kind: sent as protobuf, read back as kubectl meant it', async (g) => {
    // Flags before the container command (`-- serve -x`).
    const split = g.args.includes('--') ? g.args.indexOf('--') : g.args.length;
    const dryRun = [...g.args.slice(0, split), '--dry-run=client', '-o', 'json', ...g.args.slice(split)];
    const { stdout: meant } = await kubectl(['create', ...dryRun]);
    const { stderr } = await kubectl(['-v=8', 'create', ...g.args]);
    expect(stderr).toMatch(/Content-Type: application\/vnd\.kubernetes\.protobuf/);
    const { stdout: read } = await kubectl(['get', g.kind, g.name, '-o', 'json']);
    expect(comparable(JSON.parse(read) as Json)).toEqual(comparable(JSON.parse(meant) as Json));
    // The same object created from JSON (namespaces are cluster-wide: a second name instead).
    const twin = JSON.parse(meant) as Json;
    const twinArgs = g.kind === 'namespace' ? [] : ['-n', 'json-twins'];
    if (g.kind === 'namespace') (twin.metadata as Json).name = 'pb-ns-json';
    await kubectl(['create', ...twinArgs, '--validate=false', '-f', '-'], JSON.stringify(twin));
    const twinName = g.kind === 'namespace' ? 'pb-ns-json' : g.name;
    const { stdout: twinRead } = await kubectl(['get', ...twinArgs, g.kind, twinName, '-o', 'json']);
    const fromJson = comparable(JSON.parse(twinRead) as Json);
    if (g.kind === 'namespace') (fromJson.metadata as Json).name = g.name;
    expect(comparable(JSON.parse(read) as Json)).toEqual(fromJson);
  });

  it('kubectl apply -k deploy/k8s/: every rendered object reads back as rendered', async () => {
    const { stdout: rendered } = await kubectl(['kustomize', 'deploy/k8s']);
    const objects = parseAllDocuments(rendered).map((d) => d.toJSON() as Json);
    await kubectl(['apply', '-k', 'deploy/k8s/', '--validate=false']);
    expect(objects.length).toBeGreaterThan(10);
    for (const object of objects) {
      const { name, namespace } = object.metadata as { name: string; namespace?: string };
      const kind =
        `${String(object.kind)}.${String(object.apiVersion).split('/').slice(0, -1).join('/') || ''}`.replace(
          /\.$/,
          '',
        );
      const { stdout } = await kubectl([
        'get',
        kind,
        name,
        ...(namespace ? ['-n', namespace] : []),
        '-o',
        'json',
      ]);
      expect(comparable(JSON.parse(stdout) as Json), `${kind} ${name}`).toEqual(comparable(object));
    }
  });
});

/** A protobuf field: its key, then a varint value or a length-delimited one. */
function field(number: number, value: number | Buffer | string): Buffer {
  const varint = (n: number) => {
    const bytes: number[] = [];
    for (; n > 0x7f; n = Math.floor(n / 128)) bytes.push((n & 0x7f) | 0x80);
    bytes.push(n);
    return Buffer.from(bytes);
  };
  if (typeof value === 'number') return Buffer.concat([varint(number * 8), varint(value)]);
  const bytes = Buffer.from(value);
  return Buffer.concat([varint(number * 8 + 2), varint(bytes.length), bytes]);
}

/** `k8s\0` + runtime.Unknown{typeMeta, raw}. */
function envelope(apiVersion: string, kind: string, raw: Buffer): Buffer {
  const typeMeta = Buffer.concat([field(1, apiVersion), field(2, kind)]);
  return Buffer.concat([Buffer.from('k8s\0', 'latin1'), field(1, typeMeta), field(2, raw)]);
}

function post(path: string, body: Buffer) {
  return new Promise<{ status: number; body: Json }>((done, fail) => {
    const headers = { 'content-type': 'application/vnd.kubernetes.protobuf' };
    const req = request({ host: '127.0.0.1', port: api.port, path, method: 'POST', headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        done({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString()) as Json }),
      );
    });
    req.on('error', fail);
    req.end(body);
  });
}

describe('malformed and hostile protobuf bodies', () => {
  const meta = (name: string) => field(1, field(1, name));
  const cases: [string, Buffer, RegExp][] = [
    ['no magic', Buffer.from('{"kind":"ConfigMap"}'), /k8s\\0 magic/],
    ['a kind it does not decode', envelope('v1', 'Pod', meta('p')), /kind v1\/Pod is not decoded/],
    ['a truncated length', envelope('v1', 'ConfigMap', Buffer.from([0x0a, 0x7f, 0x0a])), /runs past the end/],
    ['an endless varint', envelope('v1', 'ConfigMap', Buffer.alloc(20, 0xff)), /varint runs past/],
    [
      'an unknown field with a value',
      envelope('v1', 'ConfigMap', Buffer.concat([meta('x'), field(9, 'boo')])),
      /field 9 of ConfigMap/,
    ],
    [
      'a wrong wire type',
      envelope('v1', 'ConfigMap', Buffer.concat([meta('x'), field(4, 'yes')])),
      /immutable is not a varint/,
    ],
    ['a group wire type', envelope('v1', 'ConfigMap', Buffer.from([0x0b])), /wire type 3/],
  ];
  it.each(cases)('%s: 415 naming what is wrong', async (_what, body, message) => {
    const answer = await post('/api/v1/namespaces/default/configmaps', body);
    expect(answer.status).toBe(415);
    expect(answer.body).toMatchObject({ kind: 'Status', reason: 'UnsupportedMediaType' });
    expect(String(answer.body.message)).toMatch(message);
  });

  it('decodes a message built by hand: zero fields dropped, unknown zero fields ignored', async () => {
    const data = Buffer.concat([field(1, 'k'), field(2, 'v')]);
    const raw = Buffer.concat([meta('hand'), field(2, data), field(9, ''), field(4, 0)]);
    const answer = await post('/api/v1/namespaces/default/configmaps', envelope('v1', 'ConfigMap', raw));
    expect(answer.status).toBe(201);
    expect(answer.body).toMatchObject({ kind: 'ConfigMap', data: { k: 'v' }, immutable: false });
    expect(answer.body.metadata).toMatchObject({ name: 'hand', namespace: 'default' });
  });
});
