// What the control plane keeps across a restart (node:sqlite), and what it finishes there that a
// crashed process left mid-way; also the Host and Origin guards, each on a runtime of its own.
import {
  GetAgentRuntimeCommand,
  ListAgentRuntimeVersionsCommand,
  ListTagsForResourceCommand,
  ResourceNotFoundException,
} from '@aws-sdk/client-bedrock-agentcore-control';
import { request as httpRequest } from 'node:http';
import { describe, expect, it } from 'vitest';
import { createReady, invokeJson, pollStatus, sessionId, startRuntime, waitFor } from './test-support.js';
import { createSqliteStore } from './control/store/sqlite-store.js';

describe('persistence', () => {
  it('keeps runtimes, versions and tags across a restart (node:sqlite)', async () => {
    const first = await startRuntime();
    const ready = await createReady(first.control, 'durable', 'counter', { tags: { keep: 'me' } });
    await first.server.close();
    const second = await startRuntime({}, first.dataDir);
    try {
      const got = await second.control.send(
        new GetAgentRuntimeCommand({ agentRuntimeId: ready.agentRuntimeId! }),
      );
      expect(got.status).toBe('READY');
      expect(got.agentRuntimeArn).toBe(ready.agentRuntimeArn);
      expect(
        (await second.control.send(new ListTagsForResourceCommand({ resourceArn: ready.agentRuntimeArn! })))
          .tags,
      ).toEqual({ keep: 'me' });
      expect(
        (await invokeJson(second.data, ready.agentRuntimeArn!, sessionId('after-restart'), {})).count,
      ).toBe(1);
    } finally {
      await second.close();
      await first.close();
    }
  });

  it('settles a runtime a crashed process left in CREATING when it starts again', async () => {
    const first = await startRuntime();
    const ready = await createReady(first.control, 'interrupted', 'counter');
    await first.server.close();
    // What a crash between CreateAgentRuntime and its artifact check leaves behind.
    const store = createSqliteStore(first.dataDir);
    const id = ready.agentRuntimeId!;
    const runtime = store.get('runtime', id)!;
    const key = `${id}#${runtime.latestVersion}`;
    await store.put('runtime', id, { ...runtime, status: 'CREATING' }, '', Date.parse(runtime.createdAt));
    await store.put(
      'version',
      key,
      { ...store.get('version', key)!, status: 'CREATING' },
      id,
      runtime.latestVersion,
    );
    await store.close();
    const second = await startRuntime({}, first.dataDir);
    try {
      expect((await pollStatus(second.control, id)).status).toBe('READY');
      expect((await invokeJson(second.data, ready.agentRuntimeArn!, sessionId('recovered'), {})).count).toBe(
        1,
      );
    } finally {
      await second.close();
      await first.close();
    }
  });

  it('finishes a deletion a crashed process left DELETING when it starts again', async () => {
    const first = await startRuntime();
    const ready = await createReady(first.control, 'interrupted_delete', 'counter');
    await first.server.close();
    // What a crash between DeleteAgentRuntime's 202 and the end of its work leaves behind.
    const store = createSqliteStore(first.dataDir);
    const id = ready.agentRuntimeId!;
    const runtime = store.get('runtime', id)!;
    await store.put('runtime', id, { ...runtime, status: 'DELETING' }, '', Date.parse(runtime.createdAt));
    await store.close();
    const second = await startRuntime({}, first.dataDir);
    try {
      const gone = () =>
        second.control.send(new GetAgentRuntimeCommand({ agentRuntimeId: id })).then(
          () => false,
          (e: unknown) => e instanceof ResourceNotFoundException,
        );
      await waitFor(gone, 15_000, 'the interrupted deletion finished');
      await expect(
        second.control.send(new ListAgentRuntimeVersionsCommand({ agentRuntimeId: id })),
      ).rejects.toBeInstanceOf(ResourceNotFoundException);
      expect(second.logs.some((l) => String(l.msg).includes('left DELETING'))).toBe(true);
    } finally {
      await second.close();
      await first.close();
    }
  }, 30_000);

  it('refuses a foreign Host (DNS rebinding) and cross-site state-changing requests, not plain clients', async () => {
    const rt = await startRuntime({ allowedHosts: ['runtime'] });
    const send = (headers: Record<string, string>, method = 'POST') =>
      new Promise<{ status: number; type: string | undefined; body: string }>((resolve, reject) => {
        const url = new URL(`${rt.server.url}/runtimes`);
        const req = httpRequest(
          { host: url.hostname, port: url.port, path: '/runtimes/', method, headers },
          (res) => {
            let body = '';
            res.on('data', (c: Buffer) => (body += c.toString()));
            res.on('end', () =>
              resolve({
                status: res.statusCode!,
                type: res.headers['x-amzn-errortype'] as string | undefined,
                body,
              }),
            );
          },
        );
        req.on('error', reject);
        req.end(method === 'POST' ? '{}' : undefined);
      });
    try {
      const rebound = await send({ host: 'attacker.example:8787' }, 'GET');
      expect(rebound.status).toBe(403);
      expect(rebound.type).toBe('AccessDeniedException');
      expect(rebound.body).toContain('AGENTRT_RUNTIME_ALLOWED_HOSTS');
      const csrf = await send({
        host: 'localhost',
        origin: 'https://attacker.example',
        'content-type': 'text/plain',
      });
      expect(csrf.status).toBe(403);
      expect(csrf.body).toContain('cross-site');
      // By service name, and by a plain client without Origin: ListAgentRuntimes (POST /runtimes/) answers.
      for (const host of ['runtime:8787', '127.0.0.1']) {
        const ok = await send({ host, 'content-type': 'application/json' });
        expect(ok.status).toBe(200);
        expect(ok.body).toContain('agentRuntimes');
      }
      // A loopback name passes the guard and reaches the router (which knows no GET there).
      const routed = await send({ host: 'localhost:1' }, 'GET');
      expect(routed.body).toContain('method GET is not allowed');
    } finally {
      await rt.close();
    }
  });

  it('lets the pages of AGENTRT_RUNTIME_ALLOWED_ORIGINS in (CORS: preflight, headers), and no other origin', async () => {
    const page = 'http://127.0.0.1:4318';
    const rt = await startRuntime({ allowedOrigins: [page] });
    const list = (origin: string, init: RequestInit = {}) =>
      fetch(`${rt.server.url}/runtimes/`, {
        method: 'POST',
        body: '{}',
        ...init,
        headers: {
          origin,
          'sec-fetch-site': 'cross-site',
          'content-type': 'application/json',
          ...init.headers,
        },
      });
    try {
      const preflight = await fetch(`${rt.server.url}/runtimes/x/invocations`, {
        method: 'OPTIONS',
        headers: {
          origin: page,
          'access-control-request-method': 'POST',
          'access-control-request-headers':
            'content-type,x-amzn-bedrock-agentcore-runtime-session-id,traceparent',
        },
      });
      expect(preflight.status).toBe(204);
      expect(preflight.headers.get('access-control-allow-origin')).toBe(page);
      expect(preflight.headers.get('access-control-allow-headers')).toContain(
        'x-amzn-bedrock-agentcore-runtime-session-id',
      );
      const allowed = await list(page);
      expect(allowed.status).toBe(200);
      expect(allowed.headers.get('access-control-allow-origin')).toBe(page);
      expect(allowed.headers.get('access-control-expose-headers')).toContain('mcp-session-id');
      const other = await list('http://127.0.0.1:9999');
      expect(other.status).toBe(403);
      expect(other.headers.get('access-control-allow-origin')).toBeNull();
      const otherPreflight = await fetch(`${rt.server.url}/runtimes/`, {
        method: 'OPTIONS',
        headers: { origin: 'http://127.0.0.1:9999', 'access-control-request-method': 'POST' },
      });
      expect(otherPreflight.headers.get('access-control-allow-origin')).toBeNull();
    } finally {
      await rt.close();
    }
  });
});
