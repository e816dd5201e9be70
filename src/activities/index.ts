import { createAttemptActivities } from './attempt-activities';
import type { ActivityDeps } from './deps';
import { createEffectActivities } from './effect-activities';
import { createJobActivities } from './job-activities';
import { createWarmUpActivities } from './warm-up-activities';

export type { ActivityDeps, AttemptSettings, Clock, SweeperSettings } from './deps';

/** Builds the activities from their dependencies; nothing here is a module-level singleton. */
export function createActivities(deps: ActivityDeps) {
  const { sendAttempt, sendMarked, settleLeftoverAttempt, ...attemptActivities } = createAttemptActivities(deps);
  return { ...createJobActivities(deps, { sendAttempt, sendMarked, settleLeftoverAttempt }), ...attemptActivities, ...createEffectActivities(deps), ...createWarmUpActivities(deps) };
}

export type Activities = ReturnType<typeof createActivities>;
