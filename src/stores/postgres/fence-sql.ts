/**
 * The statements of the PostgreSQL fence store on `<schema>.fences` (one row per resource: the
 * highest fence that wrote to it). For a fence checked on a table of your own, in one statement,
 * see the recipe in fence.ts.
 */

/** The SQL of the fence store for the table in `schema`. */
export interface FenceSql {
  /**
   * $1 resource, $2 fence → one row when `fence` is not below the highest (which it becomes), none
   * when it is. Either way the row stays locked until the transaction ends: the check and the
   * writes after it commit together, and a concurrent writer of the resource waits.
   */
  readonly advance: string;
  /** $1 resource → the highest fence (as text), or no row. */
  readonly highest: string;
}

/** The statements for the table in `schema` (already quoted). */
export function fenceSql(schema: string): FenceSql {
  const table = `${schema}.fences`;
  return {
    advance: `INSERT INTO ${table} AS f (resource, fence) VALUES ($1, $2::bigint)
      ON CONFLICT (resource) DO UPDATE SET fence = excluded.fence WHERE f.fence <= excluded.fence
      RETURNING 1 AS written`,
    highest: `SELECT fence::text AS fence FROM ${table} WHERE resource = $1`,
  };
}
