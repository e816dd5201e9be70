-- A read-only generation that hedges (operations file: retry.hedge) may have
-- more than one attempt in flight, each in a lane of its own: at most one
-- live attempt per lane, and no more lanes than the operation allows. Every
-- other operation opens its attempts in lane 0 only, so for them this index
-- says exactly what attempts_one_live_per_job said: one live attempt per job
-- (invariant 3).
ALTER TABLE attempts ADD COLUMN lane smallint NOT NULL DEFAULT 0 CHECK (lane >= 0);
CREATE UNIQUE INDEX attempts_one_live_per_lane ON attempts (job_id, lane) WHERE status IN ('starting', 'running', 'unknown');
DROP INDEX attempts_one_live_per_job;
