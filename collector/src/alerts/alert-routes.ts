// The alerts API: GET /api/alerts (rules, groups firing now, the last firings with their webhook's
// answer), POST /api/alerts/rules (replace the rules; 400 names the bad field; kept in the data
// dir's alert-rules.json), POST /api/alerts/test {"name"} (a test event to the rule's webhook).
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ApiRoute } from '../http/api-route.js';
import { HttpError } from '@agentrt/kit';
import { readJson } from '../http/respond.js';
import type { AlertEngine } from './engine.js';
import { AlertRuleError, parseRules } from './rules.js';

export const ALERT_RULES_FILE = 'alert-rules.json';

/** The rules at start: AGENTRT_ALERT_RULES_FILE, else what the API saved in the data dir, else none. */
export function loadAlertRules(engine: AlertEngine, dataDir: string, file?: string): void {
  const path = file ?? join(dataDir, ALERT_RULES_FILE);
  if (!file && !existsSync(path)) return;
  try {
    engine.setRules(parseRules(JSON.parse(readFileSync(path, 'utf8'))));
  } catch (error) {
    throw new Error(`alert rules ${path}: ${(error as Error).message}`, { cause: error });
  }
}

export function alertRoutes(engine: AlertEngine, dataDir: string): ApiRoute[] {
  return [
    { method: 'GET', path: /^\/api\/alerts$/, handle: () => engine.state() },
    {
      method: 'POST',
      path: /^\/api\/alerts\/rules$/,
      async handle({ req }) {
        const body = await readJson(req);
        try {
          engine.setRules(parseRules(body));
        } catch (error) {
          if (error instanceof AlertRuleError) throw new HttpError(400, error.message, { code: 'bad_rule' });
          throw error;
        }
        writeFileSync(join(dataDir, ALERT_RULES_FILE), JSON.stringify({ rules: engine.rules() }, null, 2));
        return { rules: engine.rules() };
      },
    },
    {
      method: 'POST',
      path: /^\/api\/alerts\/test$/,
      async handle({ req }) {
        const { name } = await readJson(req);
        if (typeof name !== 'string')
          throw new HttpError(400, 'name must be a string', { code: 'bad_request' });
        const sent = await engine.test(name);
        if (!sent)
          throw new HttpError(404, `no alert rule named '${name.slice(0, 64)}'`, { code: 'not_found' });
        return sent;
      },
    },
  ];
}
