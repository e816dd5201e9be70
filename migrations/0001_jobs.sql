-- One durable job per intent. The unique constraint on the scope is what
-- decides "one job per scope" (invariant 1), never application code.
CREATE TABLE jobs (
  id               uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
  principal_id     text        NOT NULL,
  operation        text        NOT NULL,
  idempotency_key  text        NOT NULL,
  -- 'sha256:' + hex of the RFC 8785 canonical {operation, schemaVersion, input} (invariant 2)
  request_digest   text        NOT NULL,
  schema_version   integer     NOT NULL,
  input            jsonb       NOT NULL,
  status           text        NOT NULL DEFAULT 'accepted'
                   CHECK (status IN ('accepted', 'running', 'awaiting_resolution', 'succeeded', 'failed', 'cancelled')),
  result           jsonb,
  error            jsonb,
  -- bumped by every change after which an attempt opened earlier must no longer
  -- win the result slot: a result, an attempt failed or resolved, a cancellation,
  -- a terminal write (invariant 5). Marking an attempt unknown does not bump it.
  version          bigint      NOT NULL DEFAULT 0,
  workflow_id      text        NOT NULL,
  -- What the API shows beside the row (attempts, effects, events), kept by the
  -- triggers of those tables in the same transaction as each write, so a replay
  -- is one single-row read.
  details          jsonb       NOT NULL DEFAULT '{"attempts": [], "effects": [], "events": []}'::jsonb,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  terminal_at      timestamptz,
  CONSTRAINT jobs_scope_unique UNIQUE (principal_id, operation, idempotency_key),
  CONSTRAINT jobs_result_only_when_succeeded CHECK (result IS NULL OR status = 'succeeded'),
  CONSTRAINT jobs_terminal_at_when_terminal CHECK ((terminal_at IS NOT NULL) = (status IN ('succeeded', 'failed', 'cancelled')))
);

CREATE INDEX jobs_terminal_at_idx ON jobs (terminal_at) WHERE terminal_at IS NOT NULL;

-- Every transition of a job, in order: what GET /v1/jobs/{id} shows as its history.
CREATE TABLE job_events (
  id          bigserial   PRIMARY KEY,
  job_id      uuid        NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
  type        text        NOT NULL,
  detail      jsonb       NOT NULL DEFAULT '{}'::jsonb,
  created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX job_events_job_id_idx ON job_events (job_id, id);

-- Announces every job that becomes terminal, whoever wrote it, so API requests
-- waiting with `Prefer: wait=N` answer at once.
CREATE FUNCTION jobs_notify_terminal() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('onceflow_job_terminal', NEW.id::text);
  RETURN NEW;
END;
$$;

CREATE TRIGGER jobs_terminal_notify
  AFTER UPDATE OF status ON jobs
  FOR EACH ROW
  WHEN (OLD.terminal_at IS NULL AND NEW.terminal_at IS NOT NULL)
  EXECUTE FUNCTION jobs_notify_terminal();

-- Appends each event to its job's details document (see jobs.details).
CREATE FUNCTION job_events_into_details() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE jobs
     SET details = jsonb_set(details, '{events}', (details -> 'events') || jsonb_build_array(jsonb_build_object(
           'type', NEW.type,
           'at', to_char(NEW.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
           'detail', NEW.detail)))
   WHERE id = NEW.job_id;
  RETURN NULL;
END;
$$;

CREATE TRIGGER job_events_details
  AFTER INSERT ON job_events
  FOR EACH ROW
  EXECUTE FUNCTION job_events_into_details();
