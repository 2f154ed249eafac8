// The control store's records as the API reads them — a runtime, one of its versions, an endpoint
// (the implicit DEFAULT one included) — or a 404 naming what is missing.
import { notFound } from '../errors.js';
import { endpointArn } from './arn.js';
import { type EndpointRecord, type RuntimeRecord, type Store, type VersionRecord } from './store.js';

export const DEFAULT_ENDPOINT = 'DEFAULT';

export function getRuntimeOr404(store: Store, runtimeId: string): RuntimeRecord {
  const runtime = store.get('runtime', runtimeId);
  if (!runtime) throw notFound(`Agent runtime ${runtimeId} not found`);
  return runtime;
}

export function getVersionOr404(store: Store, runtimeId: string, version: number): VersionRecord {
  const record = store.get('version', `${runtimeId}#${version}`);
  if (!record) throw notFound(`Version ${version} of agent runtime ${runtimeId} not found`);
  return record;
}

/** A named endpoint, or the implicit DEFAULT that follows the latest version. */
export function getEndpointOr404(store: Store, runtime: RuntimeRecord, name: string): EndpointRecord {
  if (name === DEFAULT_ENDPOINT) {
    return {
      runtimeId: runtime.id,
      name: DEFAULT_ENDPOINT,
      id: DEFAULT_ENDPOINT,
      arn: endpointArn(runtime.arn, DEFAULT_ENDPOINT),
      liveVersion: runtime.latestVersion,
      targetVersion: runtime.latestVersion,
      status: runtime.status === 'CREATING' || runtime.status === 'UPDATING' ? runtime.status : 'READY',
      createdAt: runtime.createdAt,
      lastUpdatedAt: runtime.lastUpdatedAt,
    };
  }
  const endpoint = store.get('endpoint', `${runtime.id}#${name}`);
  if (!endpoint) throw notFound(`Endpoint ${name} of agent runtime ${runtime.id} not found`);
  return endpoint;
}
