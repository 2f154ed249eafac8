import { describe, expect, it } from 'vitest';
import { formArguments, formFields } from './schema-form.js';

// What the MCP SDK sends for z.object({ latitude: z.number().min(-90).max(90), … }).
const schema = {
  type: 'object',
  properties: {
    latitude: { type: 'number', minimum: -90, maximum: 90, description: 'Latitude' },
    days: { type: 'integer' },
    units: { type: 'string', enum: ['metric', 'imperial'] },
    detailed: { type: 'boolean' },
    where: { type: 'object' },
    note: { type: ['string', 'null'] },
  },
  required: ['latitude'],
};

describe('a tool form from its input schema', () => {
  it('has one field per property, typed, with the required ones marked', () => {
    expect(formFields(schema).map((f) => [f.name, f.kind, f.required])).toEqual([
      ['latitude', 'number', true],
      ['days', 'integer', false],
      ['units', 'enum', false],
      ['detailed', 'boolean', false],
      ['where', 'json', false],
      ['note', 'string', false],
    ]);
    expect(formFields(undefined)).toEqual([]);
  });
  it('converts the values to arguments, leaving empty optional fields out', () => {
    const fields = formFields(schema);
    expect(
      formArguments(fields, {
        latitude: ' 47.6 ',
        days: '3',
        units: 'metric',
        detailed: true,
        where: '{"a":1}',
      }),
    ).toEqual({ latitude: 47.6, days: 3, units: 'metric', detailed: true, where: { a: 1 } });
    expect(formArguments(fields, { latitude: '0' })).toEqual({ latitude: 0, detailed: false });
  });
  it('names the field of a value that does not fit', () => {
    const fields = formFields(schema);
    const problem = (values: Record<string, string>) => {
      try {
        formArguments(fields, values);
        return undefined;
      } catch (error) {
        return (error as Error).message;
      }
    };
    expect(problem({})).toBe('latitude is required');
    expect(problem({ latitude: 'north' })).toBe('latitude must be a number');
    expect(problem({ latitude: '-91' })).toBe('latitude must be at least -90');
    expect(problem({ latitude: '1', days: '1.5' })).toBe('days must be a whole number');
    expect(problem({ latitude: '1', where: '{' })).toMatch(/^where must be JSON: /);
  });
});
