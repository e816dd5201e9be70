-- What a downstream was shown to do (invariant 14): a drill per claim its
-- effect's declaration makes (a lookup that tells a send from no send, a
-- deduplication by key), run with fresh keys against the downstream the
-- declaration names, or its verify target. A verification holds for the
-- declaration (its digest) and the host it ran against: either changing
-- makes it stale, as does its age.
CREATE TABLE effect_verifications (
  id                 bigserial   PRIMARY KEY,
  effect             text        NOT NULL,
  declaration_digest text        NOT NULL,
  host               text        NOT NULL,
  onceflow_version   text        NOT NULL,
  passed             boolean     NOT NULL,
  -- per drill: {passed, detail, keys, requests, receipts, ms}, or {skipped, why}
  drills             jsonb       NOT NULL,
  verified_at        timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX effect_verifications_effect_idx ON effect_verifications (effect, verified_at DESC, id DESC);
CREATE INDEX effect_verifications_declaration_idx ON effect_verifications (effect, declaration_digest, host, verified_at DESC, id DESC);
