import { describe, expect, it } from 'vitest';
import { createWarmDemand } from './warm-demand.js';

describe('createWarmDemand', () => {
  it('follows the new sessions of the last window, between the floor and the cap', () => {
    const demand = createWarmDemand(1, 4, 10_000);
    expect(demand.target('v1', 0)).toBe(1);
    for (let t = 0; t < 6; t++) demand.record('v1', t * 1000);
    expect(demand.target('v1', 6000)).toBe(4); // 6 asked, capped
    expect(demand.target('v2', 6000)).toBe(1); // another version has its own
    expect(demand.target('v1', 13_500)).toBe(2); // those of t = 4 s and 5 s are still recent
    expect(demand.decaying('v1', 13_500)).toBe(true);
    expect(demand.target('v1', 16_000)).toBe(1); // all aged out: back to the floor
    expect(demand.decaying('v1', 16_000)).toBe(false);
  });

  it('keeps a fixed pool when the cap is below the floor, and forgets a dropped version', () => {
    const demand = createWarmDemand(2, 0);
    demand.record('v1', 0);
    expect(demand.target('v1', 1)).toBe(2);
    demand.forget('v1');
    expect(demand.decaying('v1', 1)).toBe(false);
  });
});
