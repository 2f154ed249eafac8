import { type DemoResult } from './demo.js';
import { type ModelProviderChoice } from './model-provider.js';
import { type RegisteredRuntime } from './runtime-registration.js';
import { type DevStackOptions } from './stack.js';

function shellQuote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}

/** Each line of `text` behind `prefix` (a service's last output under its name). */
export function indent(text: string, prefix = '    '): string {
  return text
    .split('\n')
    .map((line) => prefix + line)
    .join('\n');
}

export interface SummaryInput {
  options: DevStackOptions;
  urls: Record<string, string>;
  runtimes: RegisteredRuntime[];
  sessionId: string;
  model: ModelProviderChoice;
  demo: DemoResult[] | undefined;
  logDir: string;
  useFixtureWeatherApi: boolean;
}

/** The one summary `agentrt dev` prints once the stack is up: where everything is, and what to paste. */
export function summary({
  options,
  urls,
  runtimes,
  sessionId,
  model,
  demo,
  logDir,
  useFixtureWeatherApi,
}: SummaryInput): string {
  const collector = urls['collector']!;
  const runtime = urls['runtime']!;
  const sdk = runtimes.find((r) => r.name === 'sdk_agent');
  const runtimeFlag = options.runtimePort === 8787 ? '' : ` --url ${runtime}`;
  const payload = JSON.stringify({ prompt: 'Hello! What can you do?' });
  const weatherPayload = JSON.stringify({ prompt: 'What is the weather in Seattle?' });
  const rows: [string, string][] = [
    ...(options.ui
      ? [
          ['Trace UI', `${collector}/`] as [string, string],
          [
            'Inspector',
            `${collector}/#/inspector?host=${encodeURIComponent(runtime)}  (chat with the agents)`,
          ] as [string, string],
        ]
      : []),
    ['Collector', `${collector}  (OTLP/HTTP ${collector}/v1/traces, query API ${collector}/api/query)`],
    ['Runtime', `${runtime}  (AWS SDK endpoint; runtimes: ${runtimes.map((r) => r.name).join(', ')})`],
    ['Weather', `${urls['weather']}  (POST /weather, POST /weather-streaming)`],
    ...(useFixtureWeatherApi
      ? [['Weather API', `${urls['weather-api']}  (offline fixture)`] as [string, string]]
      : []),
    ['Model', `${model.provider}  (${model.reason})`],
    ['Data', `${options.dataDir}  (logs: ${logDir})`],
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  const lines = [
    '',
    'agentrt dev is running.',
    '',
    ...rows.map(([k, v]) => `  ${k.padEnd(width)}  ${v}`),
    '',
    'Try it (paste into another terminal):',
    `  npx agentrt invoke sdk_agent ${shellQuote(payload)} --session ${sessionId}${runtimeFlag}`,
    `  npx agentrt invoke sdk_agent ${shellQuote(JSON.stringify({ prompt: 'Weather in Seattle?', stream: true }))} --session ${sessionId} --stream${runtimeFlag}`,
    `  curl -sS ${urls['weather']}/weather -H 'content-type: application/json' -H 'X-Cloud-Agent-Runtime-Session-Id: ${sessionId}' -d ${shellQuote(weatherPayload)}`,
  ];
  if (sdk) {
    lines.push(
      `  curl -sS -X POST '${runtime}/runtimes/${encodeURIComponent(sdk.arn)}/invocations' -H 'content-type: application/json' -H 'X-Amzn-Bedrock-AgentCore-Runtime-Session-Id: ${sessionId}' -d ${shellQuote(payload)}`,
    );
  }
  lines.push(
    `  npx agentrt sessions ${sessionId}${options.collectorPort === 4318 ? '' : ` --url ${collector}`}`,
    '',
  );
  if (options.ui)
    lines.push(`Then open that session in the UI: ${collector}/#/sessions/${encodeURIComponent(sessionId)}`);
  if (demo) {
    const demoSessions = [...new Set(demo.map((d) => d.sessionId).filter(Boolean))];
    if (options.ui) lines.push(`Demo sessions are already in the UI: ${collector}/#/sessions`);
    else lines.push(`Demo sessions: ${demoSessions.join(', ')}`);
  }
  lines.push('', 'Press Ctrl-C to stop everything.', '');
  return lines.join('\n');
}
