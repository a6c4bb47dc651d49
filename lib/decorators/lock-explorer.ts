import { Inject, Injectable, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import type { InstanceWrapper } from '@nestjs/core/injector/instance-wrapper';
import { FairLockService } from '../fair-lock.service';
import { DECORATOR_AMBIGUOUS_BINDING, DECORATOR_SKIP_ON_ANSWERING_HANDLER, SEVERAL_GLOBAL_LOCK_MODULES } from '../lock.messages';
import { LockService } from '../lock.service';
import { ReadWriteLockService } from '../read-write-lock.service';
import { SemaphoreService } from '../semaphores/semaphore.service';
import { LockEngine } from '../engine/lock-engine';
import { answeringHandler } from './answering-handler';
import { lockedMethodOf } from './distributed-lock.decorator';
import { LockBinding } from './lock-binding';
import { bindClass, bindInstance, bindScopedInstance, unbind } from './lock-bindings';
import type { LockedMethod } from './locked-method';
import { checkRedissonKeyTemplates } from './redisson-key-templates';
import { watchScopedInstances } from './scoped-instances';

/**
 * Finds every `@DistributedLock` method of the application's controllers and providers at bootstrap
 * (as `@nestjs/schedule` finds its jobs), fails the bootstrap on the first one that cannot be served,
 * and records which LockModule serves each instance. It changes no method: the wrappers were made
 * at decoration time, so routes Nest registered before `onModuleInit` are locked too. Nothing here
 * talks to Redis: a failed bootstrap leaves no connection behind.
 */
@Injectable()
export class LockExplorer implements OnModuleInit, OnApplicationShutdown {
  private readonly binding: LockBinding;
  private readonly boundClasses = new Set<Function>();

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    @Inject(LockEngine) private readonly engine: LockEngine,
    locks: LockService,
    fair: FairLockService,
    readWrite: ReadWriteLockService,
    semaphores: SemaphoreService,
  ) {
    this.binding = new LockBinding(locks, fair, readWrite, semaphores, engine.options.maxNameLength);
  }

  onModuleInit(): void {
    const engines = this.discovery.getProviders().filter((wrapper) => wrapper.token === LockEngine && wrapper.instance);
    const global = engines.filter((engine) => engine.host?.isGlobal);
    if (global.length > 1) throw new Error(SEVERAL_GLOBAL_LOCK_MODULES(global.length));
    const served: Array<{ wrapper: InstanceWrapper; prototype: object; locked: LockedMethod }> = [];
    for (const wrapper of [...this.discovery.getControllers(), ...this.discovery.getProviders()]) {
      const prototype = prototypeOf(wrapper);
      if (!prototype) continue;
      const methods = this.scanner.getAllMethodNames(prototype).map((name) => (prototype as Record<string, unknown>)[name] as Function);
      const lockedMethods = methods.map((method) => lockedMethodOf(method)).filter((locked): locked is LockedMethod => locked !== undefined);
      if (lockedMethods.length === 0 || !this.serves(wrapper, engines, lockedMethods[0])) continue;
      for (const locked of lockedMethods) {
        if (locked.problem) throw locked.problem;
        // Layout 'redisson' without a nameMapper: a template's request value must not choose the whole key.
        const { redisson } = this.engine;
        if (redisson && !redisson.options.mapsNames) checkRedissonKeyTemplates(locked, redisson.nameRules);
      }
      for (const method of methods) checkSkipIfLocked(method);
      served.push({ wrapper, prototype, locked: lockedMethods[0] });
    }
    // Bind only once everything is valid: a failed bootstrap leaves nothing recorded.
    for (const { wrapper, prototype, locked } of served) this.bind(wrapper, prototype, locked);
  }

  onApplicationShutdown(): void {
    unbind(this.binding, this.boundClasses);
    this.boundClasses.clear();
  }

  /**
   * Whether this LockModule serves the instance: the only one in the application; else the one its
   * module belongs to or imports, in the order Nest's injection looks (the module's own imports
   * first, then the global one, which Nest lists among every module's imports), so a decorated
   * method uses the LockModule whose LockService its class would be injected. Two imported
   * `isGlobal: false` ones is a configuration error.
   */
  private serves(wrapper: InstanceWrapper, engines: InstanceWrapper[], locked: LockedMethod): boolean {
    if (engines.length === 1) return engines[0].instance === this.engine;
    const host = wrapper.host;
    const hostOf = new Map(engines.filter((engine) => engine.host).map((engine) => [engine.host, engine]));
    const own = host && hostOf.get(host);
    if (own) return own.instance === this.engine;
    const visible = [...(host?.imports ?? [])].map((module) => hostOf.get(module)).filter((engine) => engine !== undefined);
    const local = visible.filter((engine) => !engine.host?.isGlobal);
    if (visible.length === 0 || local.length > 1) {
      throw new Error(DECORATOR_AMBIGUOUS_BINDING(locked.method, local.length || engines.length, locked.decorator));
    }
    return visible[0].instance === this.engine;
  }

  private bind(wrapper: InstanceWrapper, prototype: object, locked: LockedMethod): void {
    const instance: unknown = wrapper.instance;
    if (wrapper.isDependencyTreeStatic() && !wrapper.isTransient && typeof instance === 'object' && instance !== null) {
      bindInstance(instance, this.binding, locked.method, locked.decorator);
      return;
    }
    // Request-scoped and transient instances are created later, one per request or consumer.
    if (watchScopedInstances(wrapper, (created) => bindScopedInstance(created, this.binding))) return;
    const type = (wrapper.metatype as Function | null) ?? prototype.constructor;
    bindClass(type, this.binding);
    this.boundClasses.add(type);
  }
}

/** The prototype whose methods a wrapper's instance uses (its class's, for a scoped provider). */
function prototypeOf(wrapper: InstanceWrapper): object | undefined {
  const instance: unknown = wrapper.instance;
  if (typeof instance === 'object' && instance !== null) return Object.getPrototypeOf(instance) ?? undefined;
  const type = wrapper.metatype;
  if (!wrapper.inject && typeof type === 'function' && type.prototype) return type.prototype as object;
  return undefined;
}

/** `skipIfLocked` where a caller waits for the answer would answer it "done" for work never done. */
function checkSkipIfLocked(method: Function): void {
  const locked = lockedMethodOf(method);
  const handler = locked?.runOptions.skipIfLocked ? answeringHandler(method) : undefined;
  if (locked && handler) throw new Error(DECORATOR_SKIP_ON_ANSWERING_HANDLER(locked.method, handler, locked.decorator));
}
