/** What the ClickHouse store's reads run on: its database's tables and two ways to SELECT. */
export interface ClickHouseReadContext {
  /** A table's name in the store's database. */
  T(name: string): string;
  select<T>(sql: string): Promise<T[]>;
  /** A SELECT whose rows are handed over as they are decoded (the event loop gets turns). */
  eachRow<T>(sql: string, each: (row: T) => void): Promise<void>;
}
