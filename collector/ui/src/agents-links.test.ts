import { describe, expect, it } from 'vitest';
import { parseRoute } from './router.js';
import { activeNow, runtimeTracesHref } from './views/agents.js';

describe('Agents chart point links', () => {
  const HOUR = 3_600_000;
  const filtersOf = (href: string) => {
    const route = parseRoute(href.slice(href.indexOf('#')));
    if (route.view !== 'traces') throw new Error(`not a traces route: ${href}`);
    return route.filters;
  };

  it('ends a clipped first bucket at the next multiple of the step', () => {
    // A range starting 20 minutes into an hour: its first hourly point sits at the range start.
    const start = 1_700_000_000_000 - (1_700_000_000_000 % HOUR) + 20 * 60_000;
    const filters = filtersOf(runtimeTracesHref('weather_agent::DEFAULT', start, HOUR, true));
    expect(filters.endMs).toBe(start - 20 * 60_000 + HOUR);
    expect(filters.status).toBe('error');
    expect(filters.q).toBe('weather_agent');
  });

  it('ends an aligned bucket one step later', () => {
    const start = 1_700_000_000_000 - (1_700_000_000_000 % HOUR);
    expect(filtersOf(runtimeTracesHref('a', start, HOUR, false)).endMs).toBe(start + HOUR);
  });
});

describe('Agents: sessions active now', () => {
  it("counts only a runtime's recent ActiveSessionCount (a restarted runtime's old sessions are gone)", () => {
    const now = 10_000_000;
    const answer = {
      name: 'ActiveSessionCount',
      fn: 'max',
      stepMs: 5000,
      series: [
        {
          group: { Name: 'live::DEFAULT' },
          points: [
            [now - 200_000, 3],
            [now - 10_000, 2],
            [now - 5000, null],
          ],
        },
        {
          group: { Name: 'restarted::DEFAULT' },
          points: [
            [now - 500_000, 4],
            [now - 5000, null],
          ],
        },
      ],
    } as unknown as Parameters<typeof activeNow>[0];
    expect(Object.fromEntries(activeNow(answer, now - 120_000))).toEqual({
      'live::DEFAULT': 2,
      'restarted::DEFAULT': 0,
    });
  });
});
