export { LockTestingModule } from './lock-testing.module';
export type { LockTestingModuleOptions } from './lock-testing.module';
export { LockTestingControls } from './lock-testing-controls';
export type { HoldElsewhereOptions, ElsewhereHold } from './lock-testing-controls';
export type { RecordedAcquisition } from './acquisition-log';
