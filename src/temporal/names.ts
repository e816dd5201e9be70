/** Names shared by configuration and the Temporal contract (no SDK imports here). */
export const DEFAULT_TASK_QUEUE = 'onceflow-jobs';
