export { jobWorkflow } from './job-workflow';
export { retentionWorkflow } from './retention-workflow';
