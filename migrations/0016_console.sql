-- The operator console's sessions. The cookie carries a random token; only
-- its SHA-256 is stored, so a read of this table signs no one in. A session
-- is bound to the key that opened it: an environment operator key removed
-- from the configuration, or a database key revoked, ends its sessions at
-- their next request. Its CSRF token travels in every form the console
-- renders and must come back with every state-changing request.
CREATE TABLE console_sessions (
  token_sha256  bytea       PRIMARY KEY CHECK (octet_length(token_sha256) = 32),
  -- who acts, as audit records name them (Principal.label): never the key
  operator      text        NOT NULL,
  key_sha256    bytea       NOT NULL CHECK (octet_length(key_sha256) = 32),
  -- the database key that signed in, when it was one (its revocation ends the session)
  api_key_id    text        REFERENCES api_keys (id) ON DELETE CASCADE,
  csrf_token    text        NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  expires_at    timestamptz NOT NULL
);

CREATE INDEX console_sessions_expires_at_idx ON console_sessions (expires_at);

-- The console's search. (A job id, whole or its first characters, is a
-- range of the primary key: no index of its own.)

-- An idempotency key, whoever's and whatever operation's.
CREATE INDEX jobs_idempotency_key_idx ON jobs (idempotency_key);

-- A principal's or an operation's jobs, newest first (jobs_scope_unique finds
-- a principal's jobs but not in time order; a top-N sort of all of them is
-- what these spare).
CREATE INDEX jobs_principal_created_idx ON jobs (principal_id, created_at DESC, id DESC);
CREATE INDEX jobs_operation_created_idx ON jobs (operation, created_at DESC, id DESC);

-- The overview's windows (attempts started, effects claimed, jobs settled
-- since an hour). Rows arrive in time order, so a block range index finds a
-- window's pages at a tiny fraction of a B-tree's size and write cost.
CREATE INDEX attempts_started_at_brin ON attempts USING brin (started_at);
CREATE INDEX effects_created_at_brin ON effects USING brin (created_at);
CREATE INDEX settlements_settled_at_brin ON settlements USING brin (settled_at);
