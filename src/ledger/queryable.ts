import type { Pool, PoolClient } from 'pg';

/** A pool or a client inside a transaction: ledger functions accept either. */
export type Queryable = Pool | PoolClient;
