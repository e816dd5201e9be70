-- A provider's verification against an operation's output contract (invariant
-- 6): for one schema version and one prompt-template hash. Rows are appended,
-- never updated: the newest row for a key is the provider's state.
CREATE TABLE provider_contracts (
  id              bigserial   PRIMARY KEY,
  operation       text        NOT NULL,
  schema_version  integer     NOT NULL,
  template_hash   text        NOT NULL,
  provider        text        NOT NULL,
  model           text        NOT NULL,
  verified_at     timestamptz NOT NULL DEFAULT now(),
  passed          boolean     NOT NULL,
  samples         integer     NOT NULL,
  -- per fixture and sample: the render check, the answer's excerpt, violations
  evidence        jsonb       NOT NULL
);

CREATE INDEX provider_contracts_current_idx
  ON provider_contracts (operation, provider, model, schema_version, template_hash, verified_at DESC);
