export { ensureRetentionSchedule } from './schedules';
