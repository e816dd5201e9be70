-- API keys kept in the database. A key reads of_<id>_<secret>: the id is
-- public (lists, audit records) and finds the row by primary key; only the
-- SHA-256 of the secret is stored. The secret is 256 random bits, so a fast
-- hash is enough (a slow one would only slow every request), and it is
-- compared in constant time.
CREATE TABLE api_keys (
  id             text        PRIMARY KEY CHECK (id ~ '^[0-9A-Za-z]{12}$'),
  principal      text        NOT NULL CHECK (principal <> ''),
  role           text        NOT NULL CHECK (role IN ('tenant', 'operator')),
  secret_sha256  bytea       NOT NULL CHECK (octet_length(secret_sha256) = 32),
  created_at     timestamptz NOT NULL DEFAULT now(),
  -- written at most once a minute per key, after the request it saw
  last_used_at   timestamptz,
  revoked_at     timestamptz,
  -- "operator" is the principal operator keys act as; no tenant may claim it.
  CONSTRAINT api_keys_operator_principal_reserved CHECK (role = 'operator' OR principal <> 'operator')
);

-- GET /v1/jobs?status=S for operators: keyset pages over (created_at, id) of one status.
CREATE INDEX jobs_status_created_idx ON jobs (status, created_at, id);

-- ...and status=needs_review, which is an effect's status: the jobs with an effect in review.
CREATE INDEX effects_needs_review_idx ON effects (job_id) WHERE status = 'needs_review';
