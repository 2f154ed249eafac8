import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import {
  type Resource,
  defaultResource,
  detectResources,
  hostDetector,
  processDetector,
  resourceFromAttributes,
} from '@opentelemetry/resources';
import type { InstrumentConfig } from './config.js';
import { VERSION } from './version.js';

/** `name` and `version` of the nearest package.json at or above `startDir`. */
export function findAppPackage(startDir: string): { name?: string; version?: string } {
  let dir = startDir;
  for (let depth = 0; depth < 32; depth++) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as unknown;
      if (pkg !== null && typeof pkg === 'object') {
        const { name, version } = pkg as { name?: unknown; version?: unknown };
        return {
          ...(typeof name === 'string' && name !== '' ? { name } : {}),
          ...(typeof version === 'string' && version !== '' ? { version } : {}),
        };
      }
    } catch {
      // no (readable) package.json here: keep walking up
    }
    const parent = dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  return {};
}

/**
 * The resource every signal carries. Precedence, lowest first: SDK defaults, process/host
 * detection, the app's package.json (`service.name`, `service.version`), `NODE_ENV` as
 * `deployment.environment.name`, `OTEL_RESOURCE_ATTRIBUTES` (e.g. `cloud.resource_id` from the
 * hosting runtime), and last `OTEL_SERVICE_NAME`.
 */
export function createResource(
  config: Pick<InstrumentConfig, 'serviceName' | 'resourceAttributes' | 'deploymentEnvironment'>,
  appDir: string,
): Resource {
  const app = findAppPackage(appDir);
  const base: Record<string, string> = {
    'service.name': app.name ?? 'unknown_service:node',
    'deployment.environment.name': config.deploymentEnvironment,
    'telemetry.distro.name': '@agentrt/instrument',
    'telemetry.distro.version': VERSION,
  };
  if (app.version !== undefined) base['service.version'] = app.version;
  const overrides: Record<string, string> = { ...config.resourceAttributes };
  if (config.serviceName !== undefined) overrides['service.name'] = config.serviceName;
  return defaultResource()
    .merge(detectResources({ detectors: [processDetector, hostDetector] }))
    .merge(resourceFromAttributes(base))
    .merge(resourceFromAttributes(overrides));
}
