/**
 * Reads a judge's answer. Models wrap JSON in prose or code fences, answer on 1–5 or 0–10 scales,
 * or answer garbage; this takes the first JSON object with a score, else a `score: x` line, and
 * otherwise says the answer could not be read. It never throws.
 */
export type ParsedJudgement =
  { ok: true; value: number; label: string; explanation: string } | { ok: false; errorMessage: string };

const EXCERPT_CHARS = 200;

function labelFor(value: number): string {
  return value >= 0.75 ? 'Good' : value >= 0.5 ? 'Fair' : 'Poor';
}

/** A score on 0–1, 0–5 or 0–10 brought to 0–1; anything else is unreadable. */
function normalize(raw: number): number | undefined {
  if (!Number.isFinite(raw) || raw < 0) return undefined;
  if (raw <= 1) return raw;
  if (raw <= 5) return raw / 5;
  if (raw <= 10) return raw / 10;
  return undefined;
}

function fromObject(obj: Record<string, unknown>): ParsedJudgement | undefined {
  const raw = obj.score ?? obj.value ?? obj.rating;
  const num = typeof raw === 'string' ? Number(raw) : raw;
  const value = typeof num === 'number' ? normalize(num) : undefined;
  if (value === undefined) return undefined;
  const label = typeof obj.label === 'string' && obj.label.trim() ? obj.label.trim() : labelFor(value);
  const why = obj.explanation ?? obj.reasoning ?? obj.reason;
  return { ok: true, value, label, explanation: typeof why === 'string' ? why : '' };
}

/** Every balanced `{…}` in the text, outermost first. */
function jsonCandidates(text: string): string[] {
  const out: string[] = [];
  for (let start = text.indexOf('{'); start !== -1; start = text.indexOf('{', start + 1)) {
    let depth = 0;
    for (let i = start; i < text.length; i++) {
      if (text[i] === '{') depth++;
      else if (text[i] === '}' && --depth === 0) {
        out.push(text.slice(start, i + 1));
        break;
      }
    }
  }
  return out;
}

export function parseJudgeAnswer(text: string): ParsedJudgement {
  for (const candidate of jsonCandidates(text)) {
    try {
      const parsed = JSON.parse(candidate) as unknown;
      if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) {
        const found = fromObject(parsed as Record<string, unknown>);
        if (found) return found;
      }
    } catch {
      // Not JSON (prose with braces): try the next candidate, then the plain-text form.
    }
  }
  const line = /\b(?:score|rating)\b\s*[:=]\s*(\d+(?:\.\d+)?)/i.exec(text);
  const value = line ? normalize(Number(line[1])) : undefined;
  if (value !== undefined) return { ok: true, value, label: labelFor(value), explanation: text.trim() };
  const excerpt = text.length > EXCERPT_CHARS ? `${text.slice(0, EXCERPT_CHARS)}…` : text;
  return { ok: false, errorMessage: `the judge's answer holds no score: ${JSON.stringify(excerpt)}` };
}
