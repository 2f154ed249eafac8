// `agentrt alerts`: the collector's cost alert rules, the groups firing now and the last firings
// (with their webhook's answer); `alerts set <file>` replaces the rules; `alerts test <rule>` sends
// a test event to a rule's webhook.
import { readFile } from 'node:fs/promises';
import type { AlertEvent, AlertRule } from '@agentrt/collector';
import { type CliIO, type Command, UsageError, parseCommandArgs } from '../command.js';
import { collectorJson, collectorUrl, renderTable } from '../collector-client.js';

const usage = `Usage: agentrt alerts [--json] [--url <collector>]
       agentrt alerts set <rules.json>     replace the rules: {"rules": [{"name", "measure": "tokens"|"usd",
                                           "threshold", "windowSeconds", "groupBy": "session"|"model"|<attribute>,
                                           "where": {<attribute>: <value>}, "webhook": <url>}]}
       agentrt alerts test <rule>          send a test event to the rule's webhook

A rule sums the tokens or USD cost of model calls per group over a rolling window; when a group
reaches the threshold the collector POSTs the firing to the webhook, once per window, and a
resolution when it falls back under.
  --url <url>   the collector (default $AGENTRT_COLLECTOR_URL or http://127.0.0.1:4318)`;

interface AlertState {
  rules: AlertRule[];
  firing: AlertEvent[];
  recent: AlertEvent[];
}

const post = (base: string, path: string, body: string) =>
  collectorJson<unknown>(base, path, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
  });

function show(state: AlertState, io: CliIO): void {
  io.stdout(
    renderTable(
      ['rule', 'measure', 'threshold', 'window', 'group by', 'webhook'],
      state.rules.map((r) => [r.name, r.measure, r.threshold, `${r.windowSeconds}s`, r.groupBy, r.webhook]),
    ),
  );
  io.stdout(`\nfiring now: ${state.firing.length}\n`);
  if (state.firing.length)
    io.stdout(
      renderTable(
        ['rule', 'group', 'value', 'since'],
        state.firing.map((e) => [e.rule, e.group, e.value, e.at]),
      ),
    );
  io.stdout(`\nlast events: ${state.recent.length}\n`);
  if (state.recent.length)
    io.stdout(
      renderTable(
        ['at', 'rule', 'status', 'group', 'value', 'webhook answered'],
        state.recent.map((e) => [e.at, e.rule, e.status, e.group, e.value, e.delivery ?? '(pending)']),
      ),
    );
}

export const alertsCommand: Command = {
  name: 'alerts',
  summary: 'cost alert rules (tokens or USD per session, model or attribute), firing now, test a webhook',
  usage,
  async run(argv, io) {
    const { values, positionals } = parseCommandArgs({
      args: argv,
      allowPositionals: true,
      options: { json: { type: 'boolean', default: false }, url: { type: 'string' } },
    });
    const base = collectorUrl(values.url, io);
    const [sub, arg, ...extra] = positionals;
    if (extra.length) throw new UsageError(`unexpected argument '${extra[0]}'`);
    if (sub === 'set' || sub === 'test') {
      if (!arg) throw new UsageError(sub === 'set' ? 'missing <rules.json>' : 'missing <rule>');
      const answer =
        sub === 'set'
          ? await post(base, '/api/alerts/rules', await readFile(arg, 'utf8'))
          : await post(base, '/api/alerts/test', JSON.stringify({ name: arg }));
      if (values.json) io.stdout(`${JSON.stringify(answer)}\n`);
      else if (sub === 'set') io.stdout(`${(answer as { rules: unknown[] }).rules.length} rule(s) set\n`);
      else io.stdout(`test event sent to ${arg}'s webhook: it answered ${(answer as AlertEvent).delivery}\n`);
      return 0;
    }
    if (sub) throw new UsageError(`unknown subcommand '${sub}'`);
    const state = await collectorJson<AlertState>(base, '/api/alerts');
    if (values.json) io.stdout(`${JSON.stringify(state)}\n`);
    else show(state, io);
    return 0;
  },
};
