import { DynamicModule, Logger, Provider } from '@nestjs/common';
import { TESTING_KIT_BAD_REPLICAS, TESTING_KIT_IN_PRODUCTION } from './testing-kit.messages';
import { LOCK_MODULE_ASYNC_OPTIONS_TYPE } from '../lock.module-definition';
import { LockModule } from '../lock.module';
import type { LockModuleOptions } from '../lock.options';
import { LOCK_ENGINE_SEAM, type EngineSeam } from '../engine/engine-seam';
import { AcquisitionLog } from './acquisition-log';
import { LockTestingControls } from './lock-testing-controls';
import { loadFengari } from './fengari';
import { SimulatedNetwork } from './simulated-network';

/**
 * Options of `LockTestingModule.forRoot`: LockModule's, validated the same way, plus the kit's own
 * `replicas`. No network is used: `redis` and each of `redlock.clients` only name simulated
 * in-memory servers (the same address is the same server).
 */
export interface LockTestingModuleOptions extends LockModuleOptions {
  /**
   * How many replicas each simulated server has to confirm writes (Redis `WAIT`). Default 0: with
   * `syncReplicas` set, every acquisition then fails, as against a server without replicas; set this
   * to at least `syncReplicas` for acquisitions to succeed. `LockTestingControls.setReplicas`
   * changes it during a test (a replica falling behind).
   */
  replicas?: number;
}

let warnedInProduction = false;

/** The testing kit's own providers, added to LockModule's. */
function kitProviders(replicas: number): Provider[] {
  return [
    { provide: SimulatedNetwork, useFactory: () => new SimulatedNetwork(replicas) },
    AcquisitionLog,
    {
      provide: LOCK_ENGINE_SEAM,
      inject: [SimulatedNetwork, AcquisitionLog],
      useFactory: (network: SimulatedNetwork, log: AcquisitionLog): EngineSeam => {
        if (process.env.NODE_ENV === 'production' && !warnedInProduction) {
          warnedInProduction = true;
          new Logger('LockTestingModule').warn(TESTING_KIT_IN_PRODUCTION);
        }
        return { connect: network.connect, telemetry: (real) => log.tap(real) };
      },
    },
    LockTestingControls,
  ];
}

function withKit(base: DynamicModule, replicas = 0): DynamicModule {
  return {
    ...base,
    providers: [...(base.providers ?? []), ...kitProviders(replicas)],
    exports: [...(base.exports ?? []), LockTestingControls],
  };
}

/**
 * A drop-in for `LockModule` in tests: the same providers, decorators, errors and semantics (the
 * library's own engine and Lua scripts, run against an in-memory Redis in this process), plus
 * `LockTestingControls`. No Redis and no network; leases and waits run on the global timers, so
 * fake timers move them. Import it directly, or replace the app's import with
 * `overrideModule(locks).useModule(LockTestingModule.forRoot())` where `locks` is the object the
 * app's `LockModule.forRoot(...)` returned.
 */
export class LockTestingModule extends LockModule {
  static override forRoot(options: LockTestingModuleOptions = {}): DynamicModule {
    loadFengari();
    const { replicas = 0, ...lockOptions } = options;
    if (!Number.isInteger(replicas) || replicas < 0) throw new Error(TESTING_KIT_BAD_REPLICAS(replicas));
    return withKit(super.forRoot(lockOptions), replicas);
  }

  static forRootAsync(options: typeof LOCK_MODULE_ASYNC_OPTIONS_TYPE): DynamicModule {
    loadFengari();
    return withKit(super.forRootAsync(options));
  }
}
