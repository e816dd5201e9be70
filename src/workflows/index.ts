export { jobWorkflow } from './job-workflow';
