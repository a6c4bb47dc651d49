export { LockHealthIndicator } from './lock-health.indicator';
export type { LockHealthDetails } from './lock-health.indicator';
