/** Environment variables by name, as `process.env` holds them. */
export type Env = Record<string, string | undefined>;

/** The part of an EnvReader that evaluation settings read with. */
export interface EnvReaders {
  str(name: string): string | undefined;
  int(name: string, fallback: number, min?: number): number;
  oneOf<T extends string>(name: string, allowed: readonly T[], fallback: T): T;
}

/** Reads variables one way: blank = unset; a bad value = a warning (kept in `warnings`) and the default. */
export class EnvReader implements EnvReaders {
  readonly warnings: string[] = [];
  private readonly env: Env;

  constructor(env: Env) {
    this.env = env;
  }

  str(name: string): string | undefined {
    const value = this.env[name]?.trim();
    return value ? value : undefined;
  }

  int(name: string, fallback: number, min = 0): number {
    const raw = this.str(name);
    if (raw === undefined) return fallback;
    const value = Number(raw);
    if (!Number.isInteger(value) || value < min) {
      this.warnings.push(`${name}=${raw} is not an integer >= ${min}; using ${fallback}`);
      return fallback;
    }
    return value;
  }

  bool(name: string, fallback: boolean): boolean {
    const raw = this.str(name)?.toLowerCase();
    if (raw === undefined) return fallback;
    if (['1', 'true', 'yes', 'on'].includes(raw)) return true;
    if (['0', 'false', 'no', 'off'].includes(raw)) return false;
    this.warnings.push(`${name}=${raw} is not a boolean; using ${fallback}`);
    return fallback;
  }

  oneOf<T extends string>(name: string, allowed: readonly T[], fallback: T): T {
    const raw = this.str(name);
    if (raw === undefined) return fallback;
    if ((allowed as readonly string[]).includes(raw)) return raw as T;
    this.warnings.push(`${name}=${raw} is not ${allowed.join('|')}; using ${fallback}`);
    return fallback;
  }

  /** A comma-separated list; blanks dropped. */
  list(name: string): string[] {
    return (this.str(name) ?? '')
      .split(',')
      .map((p) => p.trim())
      .filter(Boolean);
  }

  ports(name: string): number[] {
    const out: number[] = [];
    for (const part of this.list(name)) {
      const port = Number(part);
      if (Number.isInteger(port) && port > 0 && port < 65536) out.push(port);
      else this.warnings.push(`${name}: ${part} is not a port (1-65535); ignored`);
    }
    return out;
  }
}
