// The reference agent's tables and sentence (bench/instrument/agent.mjs measures it): CPU per request
// per variant, and from the CPU profiles, per part of the code and per function.
import { table } from '../lib/report.mjs';
import { pct, TAIL_COLUMNS, tailCells } from './harness.mjs';
import { PART_NAMES, perRequest } from './profile-breakdown.mjs';
import { AGENT_ROUNDS } from './settings.mjs';

/** A round's CPU per request, one variant after the other, on one line. */
export function logRound(label, rows) {
  console.log(
    `${label}: ` + rows.map((r) => `${r.name.slice(0, 24)} ${r.cpuUsPerReq.toFixed(0)} µs`).join(', '),
  );
}

/** The reference agent's table: CPU per request first, as the variants share the machine's cores. */
export function agentTable(rows) {
  return table(
    [
      'variant',
      `CPU µs/request (median of ${AGENT_ROUNDS})`,
      'CPU overhead (median of per-round ratios)',
      'req/s (all variants loaded at once)',
      ...TAIL_COLUMNS,
    ],
    rows.map((t) => [
      t.name,
      t.cpuUsPerReq.toFixed(0),
      `${((t.cpuRatio - 1) * 100).toFixed(1)}%`,
      Number.isFinite(t.rps) ? t.rps.toFixed(0) : '—',
      ...tailCells(t),
    ]),
  );
}

/** "ours X% (…)" for the reference agent: CPU per request against bare node, median of per-round ratios. */
export function agentLine(agent) {
  if (agent.length === 0) return '';
  const find = (prefix) => agent.find((r) => r.name.startsWith(prefix));
  const ratio = (r) => (r ? pct((r.cpuRatio - 1) * 100) : 'n/a');
  const [base] = agent;
  const full = find('@agentrt/instrument (--import)');
  const off = find('@agentrt/instrument, sampler off');
  return (
    `Reference agent, CPU per request over bare node (${base.cpuUsPerReq.toFixed(0)} µs): ours in full ` +
    `${ratio(full)} (${full.cpuUsPerReq.toFixed(0)} µs, ${full.otlpBytesPerReq.toFixed(0)} OTLP bytes/request), ` +
    `ours with the sampler off ${ratio(off)}, upstream register ${ratio(find('auto-instrumentations'))}, ` +
    `ADOT ${ratio(find('ADOT'))}.`
  );
}

/** The median CPU per request of the variant profile `p` is of. */
const cpuOf = (rows, p) => rows.find((r) => r.name === p.name).cpuUsPerReq;

/** Per part of the code, µs per request: each profile's shares scaled to its variant's median CPU. */
function breakdown(rows, profiles) {
  return profiles.map((p) => ({ name: p.name, parts: perRequest(p.parts, cpuOf(rows, p)), profile: p }));
}

export function breakdownTable(rows, profiles) {
  const [bare, ...others] = breakdown(rows, profiles);
  const us = (m, part) => m.parts.get(part) ?? 0;
  const shown = PART_NAMES.filter((part) => [bare, ...others].some((m) => us(m, part) >= 5));
  const total = (m) => [...m.parts.values()].reduce((a, b) => a + b, 0);
  const signed = (x) => `${x >= 0 ? '+' : ''}${x.toFixed(0)}`;
  return table(
    [
      'part (by the script of the sampled function)',
      'bare node',
      ...others.flatMap((m) => [m.name, 'added']),
    ],
    [
      ...shown.map((part) => [
        part,
        us(bare, part).toFixed(0),
        ...others.flatMap((m) => [us(m, part).toFixed(0), signed(us(m, part) - us(bare, part))]),
      ]),
      [
        '**total (µs/request)**',
        total(bare).toFixed(0),
        ...others.flatMap((m) => [total(m).toFixed(0), signed(total(m) - total(bare))]),
      ],
    ],
  );
}

/** The functions whose CPU per request grew most against bare node, per profiled variant. */
export function topAddedFunctions(rows, profiles, n = 25) {
  const scaled = profiles.map((p) => {
    const { busy, functions } = p.parts;
    return new Map([...functions].map(([f, t]) => [f, (t / busy) * cpuOf(rows, p)]));
  });
  const [bare, ...others] = scaled;
  return others
    .map((m, i) => {
      const deltas = [...new Set([...m.keys(), ...bare.keys()])]
        .map((f) => [f, (m.get(f) ?? 0) - (bare.get(f) ?? 0)])
        .sort((a, b) => b[1] - a[1])
        .slice(0, n);
      return `#### ${profiles[i + 1].name}\n\n${table(
        ['function (script:line)', 'added µs/request'],
        deltas.map(([f, d]) => [`\`${f.replaceAll('|', '\\|')}\``, d.toFixed(1)]),
      )}`;
    })
    .join('\n\n');
}
