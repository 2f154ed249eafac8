// The launchers bench/instrument compares: bare node, ours (@agentrt/instrument) and its peers,
// plain @opentelemetry/auto-instrumentations-node/register and the AWS distro (ADOT JS, installed
// into bench/.peers/instrument on first use).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { root } from './harness.mjs';

const require = createRequire(import.meta.url);
const peersDir = join(root, 'bench', '.peers', 'instrument');
const ADOT = '@aws/aws-distro-opentelemetry-node-autoinstrumentation';
const adotRegister = join(peersDir, 'node_modules', ADOT, 'build', 'src', 'register.js');

/** Installs ADOT JS if it is not there yet; false (with a warning) when that fails. */
export function ensureAdot() {
  if (existsSync(adotRegister)) return true;
  mkdirSync(peersDir, { recursive: true });
  if (!existsSync(join(peersDir, 'package.json'))) {
    writeFileSync(join(peersDir, 'package.json'), '{"name":"instrument-peers","private":true}\n');
  }
  console.log(`installing ${ADOT} into bench/.peers/instrument …`);
  const r = spawnSync(
    'npm',
    ['install', '--prefix', peersDir, '--no-audit', '--no-fund', '--ignore-scripts', `${ADOT}@0.13.0`],
    { stdio: 'inherit' },
  );
  const installed = r.status === 0 && existsSync(adotRegister);
  if (!installed) console.warn(`${ADOT} could not be installed; its rows are left out`);
  return installed;
}

/** Our launcher's build, which every "ours" variant preloads. */
export const ours = join(root, 'packages', 'instrument', 'dist');

/** Exits, saying why, when our launcher is not built. */
export function requireBuilt() {
  if (existsSync(join(ours, 'register.js'))) return;
  console.error('packages/instrument/dist is missing: run `npx tsc -b packages/instrument` first');
  process.exit(1);
}

/** Our launcher by `--import`, with `env`. */
export const oursVariant = (name, env) => ({ name, args: ['--import', join(ours, 'register.js')], env });

/** Every launcher, exporting to the sink at `sinkUrl`; ADOT's row only when `hasAdot`. */
export function launcherVariants(sinkUrl, hasAdot) {
  const otlpEnv = { OTEL_EXPORTER_OTLP_ENDPOINT: sinkUrl };
  return [
    { name: 'bare node', args: [], env: {} },
    {
      name: '@agentrt/instrument (--require)',
      args: ['--require', join(ours, 'register-require.js')],
      env: otlpEnv,
    },
    oursVariant('@agentrt/instrument (--import)', otlpEnv),
    // lean mode is the launcher's default; the upstream SDK is one setting away
    oursVariant('@agentrt/instrument, AGENTRT_SDK=otel (--import)', { ...otlpEnv, AGENTRT_SDK: 'otel' }),
    {
      name: 'auto-instrumentations-node/register',
      args: ['--require', require.resolve('@opentelemetry/auto-instrumentations-node/register')],
      env: otlpEnv,
    },
    ...(hasAdot
      ? [
          {
            name: 'ADOT JS 0.13 (agent mode)',
            args: ['--require', adotRegister],
            env: {
              AGENT_OBSERVABILITY_ENABLED: 'true',
              OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${sinkUrl}/v1/traces`,
              OTEL_EXPORTER_OTLP_LOGS_ENDPOINT: `${sinkUrl}/v1/logs`,
              OTEL_TRACES_EXPORTER: 'otlp',
              OTEL_LOGS_EXPORTER: 'otlp',
            },
          },
        ]
      : []),
  ];
}

/** The peers of a throughput run: every launcher but ours by `--require` (the same code as by `--import`). */
export const peersOf = (variants) => variants.filter((v) => v.name !== '@agentrt/instrument (--require)');
