-- Route versions: the providers file's route of each operation (a baseline,
-- recorded by every process that starts) and the canaries operators roll out
-- beside it. A version's steps never change once written, so a worker may
-- cache them by (operation, version) and run exactly the route a job recorded.
CREATE TABLE route_versions (
  operation         text        NOT NULL,
  version           text        NOT NULL,
  kind              text        NOT NULL CHECK (kind IN ('baseline', 'canary')),
  -- [{"provider": …, "model": …}, …] in failover order
  steps             jsonb       NOT NULL CHECK (jsonb_typeof(steps) = 'array' AND jsonb_array_length(steps) > 0),
  -- baseline: recorded. canary: running, then promoted or stopped (by itself or by an
  -- operator); a promoted one is later rolled back, or superseded by the next promotion.
  state             text        NOT NULL CHECK (state IN ('recorded', 'running', 'promoted', 'stopped', 'rolled_back', 'superseded')),
  owner             text,
  -- the stable share of new jobs a running canary serves, in basis points (1 = 0.01 %)
  share_bp          integer     CHECK (share_bp BETWEEN 1 AND 10000),
  expires_at        timestamptz,
  -- {"window": N, "contractViolationsPercent": p, "unknownsPercent": p, "failedPercent": p | null, "effectsInReview": n}
  thresholds        jsonb,
  -- the version that served the rest of new jobs when the canary started
  previous_version  text,
  -- why it last changed state, and who changed it ('canary' when it stopped itself)
  reason            text,
  changed_by        text,
  created_at        timestamptz NOT NULL DEFAULT now(),
  promoted_at       timestamptz,
  ended_at          timestamptz,
  PRIMARY KEY (operation, version),
  CONSTRAINT route_versions_baseline_recorded CHECK ((kind = 'baseline') = (state = 'recorded')),
  CONSTRAINT route_versions_canary_complete CHECK (kind = 'baseline' OR (owner IS NOT NULL AND share_bp IS NOT NULL AND expires_at IS NOT NULL AND thresholds IS NOT NULL))
);

-- At most one running canary, and at most one promoted version, per operation:
-- the database decides between two operators starting (or promoting) at once.
CREATE UNIQUE INDEX route_versions_one_running ON route_versions (operation) WHERE state = 'running';
CREATE UNIQUE INDEX route_versions_one_promoted ON route_versions (operation) WHERE state = 'promoted';

-- Every change of a route version, with why and by whom: started, promoted,
-- stopped (with the threshold crossed and the counts), rolled back, superseded.
CREATE TABLE route_version_events (
  id          bigserial   PRIMARY KEY,
  operation   text        NOT NULL,
  version     text        NOT NULL,
  type        text        NOT NULL,
  detail      jsonb       NOT NULL DEFAULT '{}'::jsonb,
  created_at  timestamptz NOT NULL DEFAULT now(),
  FOREIGN KEY (operation, version) REFERENCES route_versions (operation, version) ON DELETE CASCADE
);

CREATE INDEX route_version_events_version_idx ON route_version_events (operation, version, id);

-- The last N terminal jobs a version served (the canary's window), and the jobs
-- admitted to it, each read through this index.
CREATE INDEX jobs_route_version_idx ON jobs (operation, route_version, terminal_at DESC NULLS FIRST);
