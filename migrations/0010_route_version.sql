-- The route version that served a job, recorded by the request that created it:
-- success and harm are counted per route version with fixed denominators
-- (jobs admitted to it, and how each of them ended). NULL for jobs admitted
-- before it was recorded.
ALTER TABLE jobs ADD COLUMN route_version text;
