-- What a protocol entry was shown to do for a model alias: the alias's probes,
-- sent through the entry by its official client library (an answer in the
-- protocol, on contract; usage equal to the winning attempt's; a replay of the
-- same key with the same answer; the same answer streamed). A verification
-- holds for the alias's contract (its digest), the client and Onceflow's
-- version: changing any makes it stale, as does its age.
CREATE TABLE entry_verifications (
  id               bigserial   PRIMARY KEY,
  alias            text        NOT NULL,
  entry            text        NOT NULL,
  alias_digest     text        NOT NULL,
  client           text        NOT NULL,
  onceflow_version text        NOT NULL,
  passed           boolean     NOT NULL,
  -- per probe: {name, jobId, attemptId, provider, checks: {answer|usage|replay|stream: {passed, detail}}}
  probes           jsonb       NOT NULL,
  verified_at      timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX entry_verifications_alias_idx ON entry_verifications (alias, entry, verified_at DESC, id DESC);
