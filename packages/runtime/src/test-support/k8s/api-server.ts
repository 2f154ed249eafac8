// A Kubernetes API server for tests (never shipped, never used outside tests): real HTTP on a free
// loopback port, driven by kubectl and @kubernetes/client-node. It serves discovery, CRUD with
// resourceVersion preconditions (409), label and field selectors, watch resumed from a
// resourceVersion (410 once compacted), ownerReference garbage collection, ResourceQuota (403),
// CRDs from their real YAML with schema checks, protobuf bodies of the built-in kinds kubectl sends
// that way (protobuf.ts), and pods/log and pods/exec from the node the pod is
// bound to (the test kubelet). State is in memory.
import { readFileSync } from 'node:fs';
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import { type AddressInfo, type Socket } from 'node:net';
import { type Duplex } from 'node:stream';
import { sendJson } from '@agentrt/kit';
import { WebSocketServer } from 'ws';
import { parseAllDocuments } from 'yaml';
import { SERVER_VERSION, apiGroup, coreVersions, groupList, resourceList } from './discovery.js';
import { EXEC_PROTOCOLS, serveExec } from './exec-channel.js';
import { KubeError, type KubeObject, isRecord } from './objects.js';
import { patchTypeOf } from './patch.js';
import { type PodRuntime } from './pod-runtime.js';
import { PROTOBUF, decodeProtobuf } from './protobuf.js';
import { type ResourceType, builtinTypes } from './resource-types.js';
import { type ResourcePath, resolvePath, splitApiPath } from './routes.js';
import { fieldSelector, labelSelector } from './selectors.js';
import { type DeleteOptions, ObjectStore, type StoredEvent } from './store.js';

/** kube-apiserver's limit on a request body (3 MiB). */
const MAX_BODY_BYTES = 3 * 1024 * 1024;

export interface KubeApiServerOptions {
  /** Bearer token every request must carry (default: none asked). */
  token?: string;
  /** Changes kept for watches to resume from (default 2000). */
  historyLimit?: number;
  /** Port to listen on (default: a free one). */
  port?: number;
}

export interface KubeApiServer {
  readonly url: string;
  readonly port: number;
  readonly store: ObjectStore;
  /** The node `name`'s kubelet, asked for pods/log and pods/exec of the pods bound to it. */
  attachNode(name: string, runtime: PodRuntime): void;
  /** Creates the objects of a YAML file (CRDs first when it holds several kinds). */
  applyYaml(path: string): KubeObject[];
  /**
   * Ends every open watch, as kube-apiserver does when a watch times out or it shuts down: clients
   * must resume from their resourceVersion. (`suspend` cuts them instead.)
   */
  dropWatches(): void;
  /** Stops listening (connections refused) until `resume()`, on the same port; state is kept. */
  suspend(): Promise<void>;
  resume(): Promise<void>;
  close(): Promise<void>;
}

// Not @agentrt/kit's readBody: an oversized body is read on (up to 8 times the limit) so that the
// client sees a Kubernetes Status 413 as from kube-apiserver, and kubectl's protobuf is decoded here.
class Body {
  static async read(req: IncomingMessage): Promise<unknown> {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req as AsyncIterable<Buffer>) {
      size += chunk.length;
      // Past the limit the rest is read and dropped (up to 8 times it), so the client reads the 413.
      if (size > MAX_BODY_BYTES * 8) req.destroy();
      if (size <= MAX_BODY_BYTES) chunks.push(chunk);
    }
    if (size > MAX_BODY_BYTES)
      throw new KubeError('RequestEntityTooLarge', `the request body is larger than ${MAX_BODY_BYTES} bytes`);
    const body = Buffer.concat(chunks);
    // kubectl sends built-in kinds it made itself (`create namespace`, …) as protobuf.
    if (req.headers['content-type']?.startsWith(PROTOBUF)) return decodeProtobuf(body);
    const text = body.toString('utf8');
    if (text.trim() === '') return undefined;
    try {
      return JSON.parse(text) as unknown;
    } catch (error) {
      throw new KubeError(
        'BadRequest',
        `the body of the request is not valid JSON: ${(error as Error).message}`,
      );
    }
  }
}

function listOf(type: ResourceType, items: KubeObject[], resourceVersion: string): Record<string, unknown> {
  return {
    apiVersion: type.group ? `${type.group}/${type.version}` : type.version,
    kind: `${type.kind}List`,
    metadata: { resourceVersion },
    items,
  };
}

class ApiServer {
  readonly store: ObjectStore;
  private readonly nodes = new Map<string, PodRuntime>();
  private readonly watches = new Set<ServerResponse>();
  private readonly sockets = new Set<Socket>();
  private readonly wss = new WebSocketServer({
    noServer: true,
    handleProtocols: (offered) => EXEC_PROTOCOLS.find((p) => offered.has(p)) ?? false,
  });
  private server: Server;
  port = 0;

  constructor(private readonly options: KubeApiServerOptions) {
    this.store = new ObjectStore(builtinTypes());
    if (options.historyLimit) this.store.historyLimit = options.historyLimit;
    this.server = this.newServer();
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  private newServer(): Server {
    const server = createServer((req, res) => void this.handle(req, res));
    server.on('upgrade', (req, socket, head) => this.upgrade(req, socket, head));
    server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    return server;
  }

  listen(port: number): Promise<void> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, '127.0.0.1', () => {
        this.port = (this.server.address() as AddressInfo).port;
        resolve();
      });
    });
  }

  private authorized(req: IncomingMessage): boolean {
    return !this.options.token || req.headers.authorization === `Bearer ${this.options.token}`;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    try {
      if (!this.authorized(req)) throw new KubeError('Unauthorized', 'Unauthorized');
      await this.route(req, res);
    } catch (error) {
      const kube =
        error instanceof KubeError ? error : new KubeError('InternalError', (error as Error).message);
      if (!res.headersSent) sendJson(res, kube.code, kube.status());
      else res.end();
    }
  }

  private async route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const rawPath = (req.url ?? '/').split('?')[0] as string;
    if (/(^|\/)\.{1,2}(\/|$)/.test(rawPath) || rawPath.includes('%2'))
      throw new KubeError(
        'BadRequest',
        `the path ${rawPath} is not clean (no ".", ".." or encoded "/" segments)`,
      );
    const url = new URL(req.url ?? '/', this.url);
    const discovery = this.discovery(url.pathname);
    if (discovery !== undefined) {
      if (req.method !== 'GET')
        throw new KubeError('MethodNotAllowed', `${req.method ?? ''} is not allowed on ${url.pathname}`);
      return sendJson(res, 200, discovery);
    }
    const split = splitApiPath(url.pathname);
    if (!split)
      throw new KubeError('NotFound', `the server could not find the requested resource (${url.pathname})`);
    const path = resolvePath(split.groupVersion, split.rest, (gv, plural) => this.store.typeFor(gv, plural));
    if (path.subresource === 'log') return this.logs(path, url, res);
    if (path.subresource === 'exec')
      throw new KubeError(
        'BadRequest',
        'pods/exec needs a WebSocket upgrade (v4.channel.k8s.io or v5.channel.k8s.io)',
      );
    if (path.subresource && !path.type.subresources.includes(path.subresource))
      throw new KubeError('NotFound', `${path.type.plural} has no subresource ${path.subresource}`);
    if (path.name === undefined) return this.collection(req, res, url, path);
    return this.item(req, res, url, path);
  }

  private discovery(pathname: string): unknown {
    const types = this.store.allTypes();
    const path = pathname.replace(/\/+$/, '') || '/';
    if (path === '/version') return SERVER_VERSION;
    if (path === '/api') return coreVersions(`127.0.0.1:${this.port}`);
    if (path === '/apis') return groupList(types);
    if (path === '/healthz' || path === '/readyz' || path === '/livez') return 'ok';
    const core = /^\/api\/([^/]+)$/.exec(path);
    if (core) return resourceList(types, core[1] as string) ?? null;
    const group = /^\/apis\/([^/]+)$/.exec(path);
    if (group) return apiGroup(types, group[1] as string) ?? null;
    const version = /^\/apis\/([^/]+)\/([^/]+)$/.exec(path);
    if (version) return resourceList(types, `${version[1] as string}/${version[2] as string}`) ?? null;
    return undefined;
  }

  private filterOf(path: ResourcePath, url: URL) {
    const labels = labelSelector(url.searchParams.get('labelSelector'));
    const fields = fieldSelector(url.searchParams.get('fieldSelector'));
    return {
      type: path.type,
      namespace: path.namespace,
      selector: (o: KubeObject) => labels(o) && fields(o),
    };
  }

  private async collection(
    req: IncomingMessage,
    res: ServerResponse,
    url: URL,
    path: ResourcePath,
  ): Promise<void> {
    const { store } = this;
    if (req.method === 'GET') {
      if (['1', 'true'].includes(url.searchParams.get('watch') ?? '')) return this.watch(req, res, url, path);
      const filter = this.filterOf(path, url);
      return sendJson(res, 200, listOf(path.type, store.list(filter), store.resourceVersion));
    }
    if (req.method === 'POST')
      return sendJson(res, 201, store.create(path.type, path.namespace, await Body.read(req)));
    if (req.method === 'DELETE') {
      const options = deleteOptions(await Body.read(req), url);
      const items = store.list(this.filterOf(path, url));
      for (const o of items) store.delete(path.type, o.metadata.namespace, o.metadata.name, options);
      return sendJson(res, 200, listOf(path.type, items, store.resourceVersion));
    }
    throw new KubeError('MethodNotAllowed', `${req.method ?? ''} is not allowed on a collection`);
  }

  private async item(req: IncomingMessage, res: ServerResponse, url: URL, path: ResourcePath): Promise<void> {
    const { store } = this;
    const name = path.name as string;
    switch (req.method) {
      case 'GET': {
        const object = store.get(path.type, path.namespace, name);
        return sendJson(res, 200, object);
      }
      case 'PUT':
        return sendJson(
          res,
          200,
          store.update(path.type, path.namespace, name, await Body.read(req), path.subresource),
        );
      case 'PATCH': {
        const kind = patchTypeOf(req.headers['content-type']);
        return sendJson(
          res,
          200,
          store.patch(path.type, path.namespace, name, kind, await Body.read(req), path.subresource),
        );
      }
      case 'DELETE':
        return sendJson(
          res,
          200,
          store.delete(path.type, path.namespace, name, deleteOptions(await Body.read(req), url)),
        );
      default:
        throw new KubeError('MethodNotAllowed', `${req.method ?? ''} is not allowed on ${url.pathname}`);
    }
  }

  /** A watch: newline-delimited `{"type","object"}`; a compacted resourceVersion ends it with ERROR 410. */
  private watch(req: IncomingMessage, res: ServerResponse, url: URL, path: ResourcePath): void {
    const filter = this.filterOf(path, url);
    res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
    res.flushHeaders();
    const send = (event: StoredEvent) =>
      res.write(
        `${JSON.stringify({ type: event.type, object: this.store.shape(path.type, event.object) })}\n`,
      );
    let stop: () => void;
    try {
      stop = this.store.watch(filter, url.searchParams.get('resourceVersion'), send);
    } catch (error) {
      const status =
        error instanceof KubeError ? error.status() : new KubeError('InternalError', String(error)).status();
      res.end(`${JSON.stringify({ type: 'ERROR', object: status })}\n`);
      return;
    }
    this.watches.add(res);
    const timeout = Number(url.searchParams.get('timeoutSeconds'));
    const timer = timeout > 0 ? setTimeout(() => res.end(), timeout * 1000) : undefined;
    const end = () => {
      stop();
      clearTimeout(timer);
      this.watches.delete(res);
    };
    res.on('close', end);
    req.on('close', end);
  }

  private podAndNode(path: ResourcePath): { pod: KubeObject; node: PodRuntime } {
    if (path.type.plural !== 'pods' || path.type.group !== '')
      throw new KubeError('NotFound', 'only pods have log and exec');
    const pod = this.store.get(path.type, path.namespace, path.name as string);
    const nodeName = (pod.spec as { nodeName?: string } | undefined)?.nodeName;
    const node = nodeName ? this.nodes.get(nodeName) : undefined;
    if (!node)
      throw new KubeError(
        'BadRequest',
        `pod ${pod.metadata.name} is not running on a node yet (phase ${String((pod.status as { phase?: string })?.phase)})`,
      );
    return { pod, node };
  }

  private async logs(path: ResourcePath, url: URL, res: ServerResponse): Promise<void> {
    const { pod, node } = this.podAndNode(path);
    const tail = url.searchParams.get('tailLines');
    if (tail !== null && !/^\d+$/.test(tail))
      throw new KubeError('BadRequest', `tailLines must be a whole number (got ${tail})`);
    res.writeHead(200, { 'content-type': 'text/plain' });
    await node.logs(
      pod,
      {
        container: url.searchParams.get('container') ?? undefined,
        tailLines: tail === null ? undefined : Number(tail),
        follow: url.searchParams.get('follow') === 'true',
      },
      res,
    );
  }

  private upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const refuse = (error: KubeError) => {
      const body = JSON.stringify(error.status());
      socket.end(
        `HTTP/1.1 ${error.code} ${error.reason}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      );
    };
    try {
      if (!this.authorized(req)) throw new KubeError('Unauthorized', 'Unauthorized');
      const url = new URL(req.url ?? '/', this.url);
      const split = splitApiPath(url.pathname);
      const path =
        split && resolvePath(split.groupVersion, split.rest, (gv, plural) => this.store.typeFor(gv, plural));
      if (!path || path.subresource !== 'exec') throw new KubeError('NotFound', 'only pods/exec upgrades');
      const { pod, node } = this.podAndNode(path);
      const command = url.searchParams.getAll('command');
      if (command.length === 0) throw new KubeError('BadRequest', 'you must specify at least 1 command');
      const options = {
        command,
        container: url.searchParams.get('container') ?? undefined,
        stdin: url.searchParams.get('stdin') === 'true',
      };
      this.wss.handleUpgrade(req, socket, head, (ws) => serveExec(ws, options, (o) => node.exec(pod, o)));
    } catch (error) {
      refuse(error instanceof KubeError ? error : new KubeError('InternalError', (error as Error).message));
    }
  }

  attachNode(name: string, runtime: PodRuntime): void {
    this.nodes.set(name, runtime);
  }

  applyYaml(file: string): KubeObject[] {
    const docs = parseAllDocuments(readFileSync(file, 'utf8'))
      .map((d) => d.toJS() as unknown)
      .filter(isRecord) as KubeObject[];
    const crdsFirst = [...docs].sort(
      (a, b) => Number(b.kind === 'CustomResourceDefinition') - Number(a.kind === 'CustomResourceDefinition'),
    );
    return crdsFirst.map((doc) => {
      const [group, version] = doc.apiVersion.includes('/')
        ? doc.apiVersion.split('/')
        : ['', doc.apiVersion];
      const gv = group ? `${group}/${version as string}` : (version as string);
      const type = this.store
        .allTypes()
        .find((t) => (t.group ? `${t.group}/${t.version}` : t.version) === gv && t.kind === doc.kind);
      if (!type) throw new Error(`${file}: ${doc.kind} ${doc.apiVersion} is not served`);
      return this.store.create(
        type,
        type.namespaced ? (doc.metadata.namespace ?? 'default') : undefined,
        doc,
      );
    });
  }

  dropWatches(): void {
    for (const res of this.watches) res.end();
    this.watches.clear();
  }

  async suspend(): Promise<void> {
    for (const res of this.watches) res.destroy();
    this.watches.clear();
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const socket of this.sockets) socket.destroy();
    await closed;
    this.server = this.newServer();
  }

  resume(): Promise<void> {
    return this.listen(this.port);
  }

  async close(): Promise<void> {
    this.wss.close();
    if (this.server.listening) await this.suspend();
  }
}

/** DeleteOptions from the body, or from the query (`?propagationPolicy=Orphan`), as both are accepted. */
function deleteOptions(body: unknown, url: URL): DeleteOptions {
  if (body !== undefined && !isRecord(body))
    throw new KubeError('BadRequest', 'DeleteOptions must be a JSON object');
  const options = { ...(body ?? {}) } as Record<string, unknown>;
  const query = url.searchParams.get('propagationPolicy');
  if (query !== null) options.propagationPolicy = query;
  const policy = options.propagationPolicy;
  if (policy !== undefined && !['Orphan', 'Background', 'Foreground'].includes(policy as string))
    throw new KubeError(
      'BadRequest',
      `propagationPolicy must be Orphan, Background or Foreground (got ${JSON.stringify(policy)})`,
    );
  return options as DeleteOptions;
}

/** Starts a test API server on a free loopback port (or `options.port`). */
export async function startKubeApiServer(options: KubeApiServerOptions = {}): Promise<KubeApiServer> {
  const api = new ApiServer(options);
  await api.listen(options.port ?? 0);
  return {
    get url() {
      return api.url;
    },
    get port() {
      return api.port;
    },
    store: api.store,
    attachNode: (name, runtime) => api.attachNode(name, runtime),
    applyYaml: (path) => api.applyYaml(path),
    dropWatches: () => api.dropWatches(),
    suspend: () => api.suspend(),
    resume: () => api.resume(),
    close: () => api.close(),
  };
}
