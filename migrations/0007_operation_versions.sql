-- The input schema each (operation, schemaVersion) was started with. A request
-- digest binds schemaVersion, not the schema: a schema that changed under the
-- same version would give old and new jobs one version with two meanings. At
-- start each process writes what its operations file says; a changed digest is
-- taken only while no job of that version exists (src/ledger/operation-versions.ts).
CREATE TABLE operation_versions (
  operation      text        NOT NULL,
  schema_version integer     NOT NULL,
  -- 'sha256:' + hex of the RFC 8785 canonical input schema
  schema_digest  text        NOT NULL,
  first_seen_at  timestamptz NOT NULL DEFAULT now(),
  updated_at     timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (operation, schema_version)
);

-- No index on jobs (operation, schema_version): the question whether jobs of a
-- version exist is asked only when its schema changed, rarely enough that a
-- scan then costs less than one more index on every admission.
