#!/usr/bin/env node
'use strict';
/**
 * Consumer test (`npm run test:consumer`): installs the package as a user would and runs it.
 *
 * 1. `npm pack` (prepack builds dist/), then checks the tarball: LICENSE, README, compiled Lua
 *    sources, no `lua/` read at runtime, no install-time script, no source map without its sources.
 * 2. Scratch apps in a temp dir, each installing the tarball next to its own peers (npm refuses a
 *    peer range that does not match), compiled with `tsc` under `strict`, booted against a
 *    redis-server this script starts on a free port:
 *      - nest11-cjs:  NestJS 11, CommonJS, Express, ioredis 5
 *      - nest12-esm:  NestJS 12, ESM ("type": "module"), Fastify, ioredis 6, plus the app's own
 *                     catch-all exception filter (useGlobalFilters) written as the README says
 *      - bundled:     nest11-cjs's build bundled by esbuild with every dependency inlined (Nest's
 *                     optional modules external, as the usual recipe does), copied alone to another
 *                     directory and started from a third one
 *    Each: a `@DistributedLock` route answers 200; while one request holds the lock a second one
 *    gets 423 Locked (waitTime 100 ms); another key is not blocked; after the release it answers 200.
 *    Each app also unit-tests itself with the testing kit (`nestjs-redis-locks/testing`), no Redis:
 *    nest11-cjs with Jest (ts-jest, fake timers, --detectOpenHandles: it must exit by itself),
 *    nest12-esm with `node --test`; both replace the app's LockModule import through
 *    `overrideModule(locks).useModule(LockTestingModule.forRoot())`.
 *    Each app mounts the lock board (`nestjs-redis-locks/board`, guard: false) at /ops/locks: its
 *    page, script and snapshot answer, and the snapshot shows the lock a request holds.
 *    The two apps also install @nestjs/terminus of their Nest major (11: CommonJS; 12: ESM-only,
 *    loaded by this CommonJS library through `require(esm)`) and serve GET /health with
 *    `LockHealthIndicator` from `nestjs-redis-locks/terminus`: 200 with the indicator's `up` details,
 *    then 503 with its `down` details (an answer, not an exception) once the script stops the app's
 *    own redis-server. Each app gets its own redis-server for that reason.
 *
 * Installs use the npm cache (--prefer-offline). KEEP_CONSUMER_TMP=1 keeps the temp dir.
 */
const { spawn, execFileSync } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');

const root = path.resolve(__dirname, '..', '..');
const started = Date.now();
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'nrl-consumer-'));
const children = new Set();

const log = (message) => console.log(`[consumer ${((Date.now() - started) / 1000).toFixed(1)}s] ${message}`);

function fail(message) {
  throw new Error(message);
}

/** Runs a command, resolves its output; rejects with the output when it fails. */
function run(command, args, options = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], ...options });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 ? resolve(output) : reject(new Error(`${command} ${args.join(' ')} (in ${options.cwd ?? root}) exited ${code}:\n${output}`)),
    );
  });
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function waitFor(check, what, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      if (await check()) return;
    } catch {
      // not yet
    }
    if (Date.now() > deadline) fail(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

async function startRedis() {
  const port = await freePort();
  // REDIS_SERVER_BIN / REDIS_CLI_BIN: the server the test helpers use too (default: on PATH).
  const child = spawn(process.env.REDIS_SERVER_BIN || 'redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: 'ignore',
  });
  children.add(child);
  await waitFor(() => {
    const out = execFileSync(process.env.REDIS_CLI_BIN || 'redis-cli', ['-p', String(port), 'PING'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    return out.trim() === 'PONG';
  }, 'redis-server');
  const exited = new Promise((resolve) => child.once('exit', resolve));
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    /** Kills redis-server and resolves once it is gone (its port refuses connections). */
    async stop() {
      child.kill('SIGKILL');
      await exited;
      children.delete(child);
    },
  };
}

// ---------------------------------------------------------------------------------------------
// The package

async function pack() {
  const out = await run('npm', ['pack', '--json', '--pack-destination', tmp], { cwd: root });
  const info = JSON.parse(out.slice(out.indexOf('[')));
  const tarball = path.join(tmp, info[0].filename);
  const files = info[0].files.map((f) => f.path);
  const has = (p) => files.includes(p);
  for (const required of [
    'package.json',
    'LICENSE',
    'README.md',
    'CHANGELOG.md',
    'dist/lib/index.js',
    'dist/lib/index.d.ts',
    'dist/lib/redis/lua-sources.generated.js',
    'dist/lib/testing/index.js',
    'dist/lib/testing/index.d.ts',
  ]) {
    if (!has(required)) fail(`the tarball lacks ${required}`);
  }
  const strays = files.filter((f) => !f.startsWith('dist/lib/') && !['package.json', 'LICENSE', 'README.md', 'CHANGELOG.md'].includes(f));
  if (strays.length) fail(`unexpected files in the tarball: ${strays.join(', ')}`);
  const pkgDir = path.join(tmp, 'unpacked');
  fs.mkdirSync(pkgDir);
  execFileSync('tar', ['-xzf', tarball, '-C', pkgDir]);
  const pkg = JSON.parse(fs.readFileSync(path.join(pkgDir, 'package', 'package.json'), 'utf8'));
  for (const hook of ['preinstall', 'install', 'postinstall', 'prepare']) {
    if (pkg.scripts && pkg.scripts[hook]) fail(`the package has an install-time script: ${hook}`);
  }
  for (const field of ['repository', 'homepage', 'bugs', 'keywords', 'license', 'engines', 'peerDependencies']) {
    if (!pkg[field]) fail(`package.json lacks ${field}`);
  }
  // The optional peers: terminus for the /terminus subpath (both majors the apps below run), and the
  // OpenTelemetry API (the apps do not install it: buildApp checks npm left it out).
  const peers = pkg.peerDependencies;
  const optional = pkg.peerDependenciesMeta ?? {};
  for (const major of ['11', '12']) {
    if (!String(peers['@nestjs/terminus']).split('||').some((range) => range.trim() === `^${major}`)) {
      fail(`peerDependencies['@nestjs/terminus'] (${peers['@nestjs/terminus']}) lacks ^${major}`);
    }
  }
  for (const name of ['@nestjs/terminus', '@opentelemetry/api']) {
    if (!peers[name] || optional[name]?.optional !== true) fail(`${name} is not an optional peer dependency`);
  }
  // Every source map ships the text of the sources it names (or there are no maps at all).
  for (const map of files.filter((f) => f.endsWith('.map'))) {
    const json = JSON.parse(fs.readFileSync(path.join(pkgDir, 'package', map), 'utf8'));
    const contents = json.sourcesContent ?? [];
    if (contents.length !== json.sources.length || contents.some((c) => typeof c !== 'string')) {
      fail(`${map} names sources it does not carry`);
    }
  }
  const js = files.filter((f) => f.endsWith('.js')).map((f) => fs.readFileSync(path.join(pkgDir, 'package', f), 'utf8'));
  if (js.some((text) => /['"`]\.\.\/[^'"`]*lua['"`/]/.test(text) || /readFileSync\([^)]*\.lua/.test(text))) {
    fail('the compiled library still reads lua/ from disk');
  }
  log(`packed ${path.basename(tarball)} (${files.length} files)`);
  return tarball;
}

// ---------------------------------------------------------------------------------------------
// The scratch apps

/** The app's source; `esm` adds the .js extensions Node's ESM resolution wants. */
function appSource({ platform, esm, ownFilter, health, kitTest }) {
  const ext = esm ? '.js' : '';
  const files = {};
  if (health) {
    files['src/health.controller.ts'] = `import { Controller, Get } from '@nestjs/common';
import { HealthCheck, HealthCheckResult, HealthCheckService } from '@nestjs/terminus';
import { LockHealthIndicator } from 'nestjs-redis-locks/terminus';

@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly locks: LockHealthIndicator,
  ) {}

  @Get()
  @HealthCheck()
  check(): Promise<HealthCheckResult> {
    return this.health.check([() => this.locks.isHealthy()]);
  }
}
`;
  }
  files['src/work.controller.ts'] = `import { Controller, Get, Param, Query } from '@nestjs/common';
import { DistributedLock, LockService } from 'nestjs-redis-locks';

export interface WorkResult {
  id: string;
  held: number;
  locked: boolean;
}

@Controller('work')
export class WorkController {
  constructor(private readonly locks: LockService) {}

  @Get(':id')
  @DistributedLock('work:#id', { waitTime: 100 })
  async work(@Param('id') id: string, @Query('hold') hold?: string): Promise<WorkResult> {
    const held = Number(hold ?? 0);
    await new Promise<void>((resolve) => setTimeout(resolve, held));
    const locked: boolean = await this.locks.getLock('work:' + id).isLocked();
    return { id, held, locked };
  }
}
`;
  // commandTimeout bounds the health check's PING once redis-server is gone; watchdogTimeout makes
  // the first watchdog round (reported by the indicator) come within a second.
  files['src/app.module.ts'] = `import { Module } from '@nestjs/common';
import { LockModule } from 'nestjs-redis-locks';
import { LockBoardModule } from 'nestjs-redis-locks/board';
${health ? `import { TerminusModule } from '@nestjs/terminus';\nimport { LockHealthIndicator } from 'nestjs-redis-locks/terminus';\nimport { HealthController } from './health.controller${ext}';\n` : ''}import { WorkController } from './work.controller${ext}';

/** Kept in a constant so tests can replace it: overrideModule(locks).useModule(LockTestingModule.forRoot()). */
export const locks = LockModule.forRoot({
  redis: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
  keyPrefix: 'consumer:',
  commandTimeout: 1_000,
  watchdogTimeout: 3_000,
});

@Module({
  imports: [locks, LockBoardModule.forRoot({ guard: false, path: 'ops/locks' })${health ? ', TerminusModule' : ''}],
  controllers: [WorkController${health ? ', HealthController' : ''}],${health ? '\n  providers: [LockHealthIndicator],' : ''}
})
export class AppModule {}
`;
  if (ownFilter) {
    // The README's recipe: an app-wide catch-all filter that keeps the library's 423/503 answers.
    files['src/all-exceptions.filter.ts'] = `import { ArgumentsHost, Catch, ExceptionFilter, HttpException, HttpStatus } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { lockErrorResponse, LockTimeoutError, LockUnavailableError } from 'nestjs-redis-locks';

@Catch()
export class AllExceptionsFilter implements ExceptionFilter {
  constructor(private readonly adapterHost: HttpAdapterHost) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const { httpAdapter } = this.adapterHost;
    const response: unknown = host.switchToHttp().getResponse();
    if (exception instanceof LockTimeoutError || exception instanceof LockUnavailableError) {
      const { status, body, headers } = lockErrorResponse(exception);
      for (const [name, value] of Object.entries(headers)) httpAdapter.setHeader(response, name, value);
      httpAdapter.reply(response, { ...body, handledBy: 'app' }, status);
      return;
    }
    if (exception instanceof HttpException) {
      // Nest's own answers (404, terminus's 503 with the health details) keep their body.
      const body: unknown = exception.getResponse();
      const fields = typeof body === 'object' && body !== null ? body : { statusCode: exception.getStatus(), message: body };
      httpAdapter.reply(response, { ...fields, handledBy: 'app' }, exception.getStatus());
      return;
    }
    const status = HttpStatus.INTERNAL_SERVER_ERROR;
    httpAdapter.reply(response, { statusCode: status, message: 'app catch-all', handledBy: 'app' }, status);
  }
}
`;
  }
  const imports = [`import 'reflect-metadata';`, `import { NestFactory${ownFilter ? ', HttpAdapterHost' : ''} } from '@nestjs/core';`];
  if (platform === 'fastify') imports.push(`import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';`);
  imports.push(`import { AppModule } from './app.module${ext}';`);
  if (ownFilter) imports.push(`import { AllExceptionsFilter } from './all-exceptions.filter${ext}';`);
  const create =
    platform === 'fastify'
      ? `await NestFactory.create<NestFastifyApplication>(AppModule, new FastifyAdapter(), { logger: ['error', 'warn'] })`
      : `await NestFactory.create(AppModule, { logger: ['error', 'warn'] })`;
  if (kitTest === 'jest') {
    // Type-checked by ts-jest under strict; Jest fake timers move the lock waits.
    files['test/work.kit.spec.ts'] = `import { Test, TestingModule } from '@nestjs/testing';
import { LockTimeoutError, LockUnavailableError } from 'nestjs-redis-locks';
import { LockTestingControls, LockTestingModule } from 'nestjs-redis-locks/testing';
import { AppModule, locks } from '../src/app.module';
import { WorkController } from '../src/work.controller';

describe('WorkController with the testing kit and Jest fake timers', () => {
  let moduleRef: TestingModule;
  let controls: LockTestingControls;
  let work: WorkController;

  beforeEach(async () => {
    jest.useFakeTimers();
    moduleRef = await Test.createTestingModule({ imports: [AppModule] }).overrideModule(locks).useModule(LockTestingModule.forRoot()).compile();
    await moduleRef.init();
    controls = moduleRef.get(LockTestingControls);
    work = moduleRef.get(WorkController);
  });
  afterEach(async () => {
    await moduleRef.close();
    jest.useRealTimers();
  });

  it('runs the route under its lock', async () => {
    const done = work.work('a', '1000');
    await jest.advanceTimersByTimeAsync(1_000);
    await expect(done).resolves.toEqual({ id: 'a', held: 1000, locked: true });
  });

  it('gives up after waitTime while another process holds the key (the 423 case)', async () => {
    await controls.holdElsewhere('work:b');
    const outcome = work.work('b').catch((error: unknown) => error);
    await jest.advanceTimersByTimeAsync(100);
    expect(await outcome).toBeInstanceOf(LockTimeoutError);
    expect(controls.acquisitions.map((a) => a.outcome)).toEqual(['timeout']);
  });

  it('rejects LockUnavailableError while Redis is down (the 503 case)', async () => {
    controls.setUnavailable(true);
    const outcome = work.work('c').catch((error: unknown) => error);
    await jest.advanceTimersByTimeAsync(200);
    expect(await outcome).toBeInstanceOf(LockUnavailableError);
  });
});
`;
  }
  if (kitTest === 'node') {
    // Compiled with the app (ESM, nodenext) and run by \`node --test\`.
    files['src/kit.test.ts'] = `import 'reflect-metadata';
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Test } from '@nestjs/testing';
import { LockTimeoutError } from 'nestjs-redis-locks';
import { LockTestingControls, LockTestingModule } from 'nestjs-redis-locks/testing';
import { AppModule, locks } from './app.module.js';
import { WorkController } from './work.controller.js';

test('LockTimeoutError while another process holds the key, the work once it lets go', async () => {
  const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).overrideModule(locks).useModule(LockTestingModule.forRoot()).compile();
  await moduleRef.init();
  try {
    const hold = await moduleRef.get(LockTestingControls).holdElsewhere('work:b');
    await assert.rejects(moduleRef.get(WorkController).work('b'), LockTimeoutError);
    await hold.release();
    assert.deepEqual(await moduleRef.get(WorkController).work('b'), { id: 'b', held: 0, locked: true });
  } finally {
    await moduleRef.close();
  }
});
`;
  }
  files['src/main.ts'] = `${imports.join('\n')}

async function bootstrap(): Promise<void> {
  const app = ${create};
  ${ownFilter ? 'app.useGlobalFilters(new AllExceptionsFilter(app.get(HttpAdapterHost)));' : ''}
  app.enableShutdownHooks();
  await app.listen(Number(process.env.PORT), '127.0.0.1');
  console.log('consumer app listening');
}

void bootstrap();
`;
  return files;
}

const APPS = [
  {
    name: 'nest11-cjs',
    label: 'NestJS 11, CommonJS, Express, ioredis 5, terminus 11',
    platform: 'express',
    esm: false,
    ownFilter: false,
    health: true,
    kitTest: 'jest',
    deps: {
      '@nestjs/common': '^11',
      '@nestjs/core': '^11',
      '@nestjs/platform-express': '^11',
      '@nestjs/terminus': '^11',
      ioredis: '^5',
      'reflect-metadata': '^0.2',
      rxjs: '^7',
    },
    devDeps: {
      typescript: '5.9.3',
      '@types/node': '^20',
      esbuild: '^0.28',
      '@nestjs/testing': '^11',
      jest: '^29',
      'ts-jest': '^29',
      '@types/jest': '^29',
      // The testing kit's Lua VM, an optional peer dependency: a test-only install, as the README says.
      fengari: '^0.1.5',
    },
  },
  {
    name: 'nest12-esm',
    label: 'NestJS 12, ESM, Fastify, ioredis 6, terminus 12, own catch-all filter',
    platform: 'fastify',
    esm: true,
    ownFilter: true,
    health: true,
    kitTest: 'node',
    deps: {
      '@nestjs/common': '^12',
      '@nestjs/core': '^12',
      '@nestjs/platform-fastify': '^12',
      '@nestjs/terminus': '^12',
      // The app's own tests (src/kit.test.ts) compile with it.
      '@nestjs/testing': '^12',
      ioredis: '^6',
      'reflect-metadata': '^0.2',
      rxjs: '^7',
    },
    devDeps: { typescript: '5.9.3', '@types/node': '^20', fengari: '^0.1.5' },
  },
];

function tsconfig(esm) {
  return {
    compilerOptions: {
      target: 'ES2022',
      module: esm ? 'nodenext' : 'commonjs',
      moduleResolution: esm ? 'nodenext' : 'node',
      strict: true,
      experimentalDecorators: true,
      emitDecoratorMetadata: true,
      esModuleInterop: true,
      skipLibCheck: true,
      outDir: 'dist',
      rootDir: 'src',
      types: ['node'],
    },
    include: ['src'],
  };
}

async function buildApp(app, tarball) {
  const dir = path.join(tmp, app.name);
  fs.mkdirSync(path.join(dir, 'src'), { recursive: true });
  const pkg = {
    name: `consumer-${app.name}`,
    private: true,
    version: '0.0.0',
    ...(app.esm ? { type: 'module' } : {}),
    dependencies: { ...app.deps, 'nestjs-redis-locks': `file:${tarball}` },
    devDependencies: app.devDeps,
    ...(app.kitTest === 'jest'
      ? {
          jest: {
            testEnvironment: 'node',
            roots: ['<rootDir>/test'],
            transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.test.json' }] },
          },
        }
      : {}),
  };
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify(pkg, null, 2));
  fs.writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify(tsconfig(app.esm), null, 2));
  if (app.kitTest === 'jest') {
    fs.mkdirSync(path.join(dir, 'test'));
    const base = tsconfig(app.esm);
    const testConfig = { ...base, compilerOptions: { ...base.compilerOptions, rootDir: '.', types: ['node', 'jest'] }, include: ['src', 'test'] };
    fs.writeFileSync(path.join(dir, 'tsconfig.test.json'), JSON.stringify(testConfig, null, 2));
  }
  for (const [file, text] of Object.entries(appSource(app))) fs.writeFileSync(path.join(dir, file), text);
  await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: dir });
  const versions = ['@nestjs/core', ...(app.health ? ['@nestjs/terminus'] : []), 'ioredis', 'typescript'].map((name) => {
    const version = JSON.parse(fs.readFileSync(path.join(dir, 'node_modules', name, 'package.json'), 'utf8')).version;
    return `${name}@${version}`;
  });
  if (fs.existsSync(path.join(dir, 'node_modules', '@opentelemetry', 'api'))) fail(`${app.name}: npm installed the optional peer @opentelemetry/api`);
  await run(path.join(dir, 'node_modules', '.bin', 'tsc'), ['-p', 'tsconfig.json'], { cwd: dir });
  log(`${app.name} (${app.label}): installed and compiled under strict [${versions.join(', ')}]`);
  return dir;
}

/** Bundles nest11-cjs's build with every dependency inlined; copies it alone to a new directory. */
async function bundle(appDir) {
  const outDir = path.join(tmp, 'bundled', 'app');
  fs.mkdirSync(outDir, { recursive: true });
  // Nest requires these lazily and only when used (microservices, websockets, validation pipes),
  // and so does terminus for its database indicators.
  const optional = [
    '@nestjs/microservices',
    '@nestjs/microservices/microservices-module',
    '@nestjs/websockets',
    '@nestjs/websockets/socket-module',
    'class-transformer',
    'class-transformer/storage',
    'class-validator',
    '@fastify/static',
    '@fastify/view',
    // @nestjs/terminus's database indicators, required only when one is used.
    '@mikro-orm/core',
    '@nestjs/mongoose',
    '@nestjs/typeorm/*',
    '@nestjs/sequelize/*',
  ];
  await run(
    path.join(appDir, 'node_modules', '.bin', 'esbuild'),
    [
      'dist/main.js',
      '--bundle',
      '--platform=node',
      '--target=node20',
      '--format=cjs',
      '--log-level=error',
      `--outfile=${path.join(outDir, 'main.js')}`,
      ...optional.map((name) => `--external:${name}`),
    ],
    { cwd: appDir },
  );
  const text = fs.readFileSync(path.join(outDir, 'main.js'), 'utf8');
  if (!text.includes('reentrant-acquire')) fail('the bundle does not carry the Lua scripts');
  // The Lua interpreter belongs to the testing subpath only: an app's production bundle never has it.
  if (/fengari/.test(text)) fail('the bundle carries fengari (the testing kit leaked into the main entry)');
  const entries = fs.readdirSync(outDir);
  if (entries.join() !== 'main.js') fail(`the bundle directory holds more than main.js: ${entries.join(', ')}`);
  log(`bundled: ${(text.length / 1024 / 1024).toFixed(1)} MB, one file`);
  return path.join(outDir, 'main.js');
}

// ---------------------------------------------------------------------------------------------
// Booting and checking an app

async function boot(name, command, args, cwd, redisUrl) {
  const port = await freePort();
  const child = spawn(command, args, {
    cwd,
    env: { ...process.env, PORT: String(port), REDIS_URL: redisUrl, NODE_PATH: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let output = '';
  child.stdout.on('data', (c) => (output += c));
  child.stderr.on('data', (c) => (output += c));
  const exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  try {
    await Promise.race([
      waitFor(() => output.includes('consumer app listening'), `${name} to listen`),
      exited.then((code) => fail(`exited with ${code}`)),
    ]);
  } catch (error) {
    child.kill('SIGKILL');
    fail(`${name} did not start: ${error.message}\n${output}`);
  }
  return {
    base: `http://127.0.0.1:${port}`,
    output: () => output,
    async stop() {
      child.kill('SIGTERM');
      const code = await Promise.race([exited, sleep(5000).then(() => 'timeout')]);
      if (code === 'timeout') child.kill('SIGKILL');
      children.delete(child);
    },
  };
}

async function get(base, url) {
  const response = await fetch(base + url);
  const text = await response.text();
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    body = text;
  }
  return { status: response.status, body };
}

function expectEqual(actual, expected, what) {
  if (actual !== expected) fail(`${what}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`);
}

async function check(name, app, redis, { ownFilter }) {
  const free = await get(app.base, '/work/a');
  expectEqual(free.status, 200, `${name} GET /work/a`);
  expectEqual(free.body.id, 'a', `${name} body.id`);
  expectEqual(free.body.locked, true, `${name} lock held inside the route`);

  const holding = get(app.base, '/work/b?hold=1500');
  // The request holds the lock once its key is in Redis (DistributedLock('work:#id'), keyPrefix 'consumer:').
  await waitFor(
    () => execFileSync('redis-cli', ['-p', String(redis.port), 'EXISTS', 'consumer:{work:b}'], { encoding: 'utf8' }).trim() === '1',
    `${name} GET /work/b?hold=1500 to hold consumer:{work:b}`,
  );
  const [contended, otherKey] = await Promise.all([get(app.base, '/work/b'), get(app.base, '/work/c')]);
  expectEqual(contended.status, 423, `${name} GET /work/b while held`);
  expectEqual(contended.body.statusCode, 423, `${name} 423 body.statusCode`);
  expectEqual(String(contended.body.lockName), 'work:b', `${name} 423 body.lockName`);
  expectEqual(contended.body.error, 'Locked', `${name} 423 body.error`);
  if (ownFilter) expectEqual(contended.body.handledBy, 'app', `${name} answered by the app's own filter`);
  if (ownFilter) {
    const missing = await get(app.base, '/nowhere');
    expectEqual(missing.status, 404, `${name} the app's filter still handles other errors`);
    expectEqual(missing.body.handledBy, 'app', `${name} 404 answered by the app's own filter`);
  }
  expectEqual(otherKey.status, 200, `${name} GET /work/c (another key) while b is held`);
  // The lock board (nestjs-redis-locks/board): its page, script and snapshot, the held lock on it.
  const page = await get(app.base, '/ops/locks');
  expectEqual(page.status, 200, `${name} GET /ops/locks (the lock board)`);
  if (!String(page.body).includes('src="locks/board.js"')) fail(`${name} the board page's script URL: ${String(page.body).slice(0, 300)}`);
  expectEqual((await get(app.base, '/ops/locks/board.js')).status, 200, `${name} GET /ops/locks/board.js`);
  const board = await get(app.base, '/ops/locks/api/snapshot');
  expectEqual(board.status, 200, `${name} GET /ops/locks/api/snapshot`);
  if (!board.body.locks?.some((lock) => lock.name === 'work:b')) fail(`${name} the board shows work:b held: ${JSON.stringify(board.body).slice(0, 500)}`);
  const held = await holding;
  expectEqual(held.status, 200, `${name} the holder's answer`);
  const after = await get(app.base, '/work/b');
  expectEqual(after.status, 200, `${name} GET /work/b after release`);
  log(`${name}: 200 when free, 423 under contention, other keys unaffected, 200 after release; the lock board showed the held lock`);
}

/**
 * GET /health (TerminusModule + LockHealthIndicator): 200 with the indicator's `up` details once a
 * watchdog round ran; then, with the app's redis-server stopped, 503 carrying the indicator's `down`
 * details (the indicator answered; had it thrown, terminus would have no details to report).
 */
async function checkHealth(name, app, redis, { ownFilter }) {
  let up;
  await waitFor(async () => {
    up = await get(app.base, '/health');
    return up.status === 200 && typeof up.body.info?.locks?.watchdogRoundAgeMs === 'number';
  }, `${name} GET /health up with a watchdog round`, 10_000).catch((error) => fail(`${error.message}: last answer ${JSON.stringify(up)}`));
  expectEqual(up.body.status, 'ok', `${name} /health body.status`);
  const locks = up.body.info.locks;
  expectEqual(locks.status, 'up', `${name} /health locks.status`);
  if (!(typeof locks.pingMs === 'number' && locks.pingMs >= 0)) fail(`${name} /health locks.pingMs: ${JSON.stringify(locks)}`);
  expectEqual(typeof locks.subscriber, 'string', `${name} /health locks.subscriber`);
  if (!(locks.watchdogRoundAgeMs >= 0 && locks.watchdogRoundAgeMs < 10_000)) fail(`${name} /health locks.watchdogRoundAgeMs: ${JSON.stringify(locks)}`);

  await redis.stop();
  const down = await get(app.base, '/health');
  expectEqual(down.status, 503, `${name} GET /health with redis-server stopped`);
  expectEqual(down.body.status, 'error', `${name} 503 body.status`);
  const failed = down.body.error?.locks ?? {};
  expectEqual(failed.status, 'down', `${name} 503 body.error.locks.status`);
  if (!/PING/.test(String(failed.message))) fail(`${name} 503 locks.message names the failed PING: ${JSON.stringify(down.body)}`);
  expectEqual(typeof failed.subscriber, 'string', `${name} 503 locks.subscriber`);
  if (!('watchdogRoundAgeMs' in failed)) fail(`${name} 503 lacks locks.watchdogRoundAgeMs: ${JSON.stringify(down.body)}`);
  if (ownFilter) expectEqual(down.body.handledBy, 'app', `${name} 503 passed through the app's own filter`);
  log(`${name}: GET /health 200 up (pingMs ${locks.pingMs}, subscriber ${locks.subscriber}, watchdogRoundAgeMs ${locks.watchdogRoundAgeMs}), 503 down once redis-server stopped`);
}

/** The app's own unit tests with the testing kit: no Redis; a Jest run must exit by itself. */
async function runKitTests(app, dir) {
  if (app.kitTest === 'jest') {
    const output = await run(process.execPath, [path.join(dir, 'node_modules', 'jest', 'bin', 'jest.js'), '--detectOpenHandles'], {
      cwd: dir,
      env: { ...process.env, FORCE_COLOR: '0' },
    });
    if (!/Tests:\s+3 passed, 3 total/.test(output)) fail(`${app.name}: the kit's Jest tests did not all pass:\n${output}`);
    if (/open handle|did not exit/i.test(output)) fail(`${app.name}: Jest reported an open handle:\n${output}`);
    log(`${app.name}: Jest tests with nestjs-redis-locks/testing and fake timers passed, no open handle`);
  } else if (app.kitTest === 'node') {
    const output = await run(process.execPath, ['--test', path.join('dist', 'kit.test.js')], { cwd: dir });
    if (!/# pass 1/.test(output)) fail(`${app.name}: node --test with nestjs-redis-locks/testing did not pass:\n${output}`);
    log(`${app.name}: node --test with nestjs-redis-locks/testing (ESM) passed`);
  }
}

// ---------------------------------------------------------------------------------------------

async function main() {
  log(`temp dir ${tmp}`);
  const tarball = await pack();
  const dirs = await Promise.all(APPS.map((app) => buildApp(app, tarball)));
  for (const [index, app] of APPS.entries()) await runKitTests(app, dirs[index]);
  const bundlePath = await bundle(dirs[0]);

  for (const [index, app] of APPS.entries()) {
    const main = path.join(dirs[index], 'dist', 'main.js');
    // Its own redis-server: the health check stops it.
    const own = await startRedis();
    const running = await boot(app.name, process.execPath, [main], dirs[index], own.url);
    try {
      await check(app.name, running, own, app);
      if (app.health) await checkHealth(app.name, running, own, app);
    } finally {
      await running.stop();
      await own.stop();
    }
  }

  // The bundle (nest11-cjs with terminus inlined), started from a directory that is neither its own
  // nor an app's.
  const elsewhere = path.join(tmp, 'elsewhere');
  fs.mkdirSync(elsewhere);
  const redis = await startRedis();
  const running = await boot('bundled', process.execPath, [bundlePath], elsewhere, redis.url);
  try {
    await check('bundled', running, redis, { ownFilter: false });
    await checkHealth('bundled', running, redis, { ownFilter: false });
  } finally {
    await running.stop();
    await redis.stop();
  }
  log(`passed in ${((Date.now() - started) / 1000).toFixed(0)} s`);
}

main()
  .catch((error) => {
    console.error(`[consumer] FAILED: ${error.stack ?? error}`);
    process.exitCode = 1;
  })
  .finally(() => {
    for (const child of children) child.kill('SIGKILL');
    if (!process.env.KEEP_CONSUMER_TMP) fs.rmSync(tmp, { recursive: true, force: true });
    else console.log(`[consumer] kept ${tmp}`);
  });
