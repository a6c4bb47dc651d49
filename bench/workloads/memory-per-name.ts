/**
 * Memory per lock name: what acquiring and releasing many distinct names leaves in Redis. Each
 * batch of names is taken and released once with `LockService.run` (64 at a time); Redis's
 * `used_memory` (INFO memory) and key count are read before, right after the last release, and once
 * the release records (10 s) have expired, with the TTLs of what is left. The fence key of each name
 * (its last fencing token) is what stays, for an hour after its last use.
 */
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { LockModule, LockService } from '../../lib';
import { adminClient, startBenchRedis } from '../harness/redis-server';

/** The heading of this section of RESULTS.md (kept by full runs, replaced when it runs again). */
export const MEMORY_HEADING = '## Memory per lock name';

interface MemoryBatch {
  readonly label: string;
  readonly names: number;
  readonly nameLength: number;
}

export const MEMORY_BATCHES: readonly MemoryBatch[] = [
  { label: 'short names (`order:<n>`, 7 to 11 chars)', names: 100_000, nameLength: 11 },
  { label: 'names at the default maxNameLength (1024 chars)', names: 10_000, nameLength: 1024 },
];

interface Reading {
  readonly usedMemory: number;
  readonly keys: number;
}

export interface MemoryResult {
  readonly batch: MemoryBatch;
  readonly before: Reading;
  readonly afterRelease: Reading;
  readonly afterRecordsExpired: Reading;
  readonly waitedMs: number;
  /** What the keys left once the records expired are, with their remaining TTL (ms) and MEMORY USAGE. */
  readonly leftBehind: ReadonlyArray<{ key: string; type: string; ttlMs: number; bytes: number }>;
  readonly runMs: number;
}

const CONCURRENCY = 64;
/** The release records' lifetime (lib/engine/lock-engine.ts) and a margin. */
const RECORDS_GONE_AFTER_MS = 10_500;

function nameOf(index: number, length: number): string {
  const base = `order:${index}`;
  return length <= base.length + 1 ? base : `${base}:${'x'.repeat(length - base.length - 1)}`;
}

async function reading(url: string): Promise<Reading> {
  const admin = adminClient(url);
  try {
    const info = await admin.info('memory');
    return { usedMemory: Number(/^used_memory:(\d+)/m.exec(info)?.[1]), keys: await admin.dbsize() };
  } finally {
    admin.disconnect();
  }
}

async function measure(url: string, batch: MemoryBatch): Promise<MemoryResult> {
  const admin = adminClient(url);
  await admin.flushall();
  @Module({ imports: [LockModule.forRoot({ redis: url, maxNameLength: 1024 })] })
  class MemoryBenchModule {}
  const app = await NestFactory.createApplicationContext(MemoryBenchModule, { logger: false });
  try {
    const locks = app.get(LockService);
    // The instance's own record is there from the start: the baseline includes it.
    await locks.inspect('baseline');
    const before = await reading(url);
    const started = Date.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < batch.names) {
          const name = nameOf(next++, batch.nameLength);
          await locks.run(name, () => undefined);
        }
      }),
    );
    // Follows every release on the command connection: they have all run when it answers.
    await locks.inspect('flush');
    const runMs = Date.now() - started;
    const afterRelease = await reading(url);
    const expiredFrom = Date.now();
    await new Promise((resolve) => setTimeout(resolve, RECORDS_GONE_AFTER_MS));
    // Redis reclaims expired keys lazily and by sampling, which slows down once few of the keys with
    // a TTL have expired (most are fence keys): a full SCAN meets every key and reclaims the expired.
    let cursor = '0';
    do {
      [cursor] = await admin.scan(cursor, 'COUNT', 1000);
    } while (cursor !== '0');
    const afterRecordsExpired = await reading(url);
    const leftBehind = [];
    const sample = (await admin.scan('0', 'MATCH', 'lock:*', 'COUNT', 1000))[1].filter((key) => key.includes('order:'));
    for (const key of sample.slice(0, 3)) {
      leftBehind.push({
        key: key.length > 60 ? `${key.slice(0, 40)}...${key.slice(-12)}` : key,
        type: await admin.type(key),
        ttlMs: await admin.pttl(key),
        bytes: Number(await admin.call('MEMORY', 'USAGE', key)),
      });
    }
    return { batch, before, afterRelease, afterRecordsExpired, waitedMs: Date.now() - expiredFrom, leftBehind, runMs };
  } finally {
    await app.close();
    admin.disconnect();
  }
}

const perName = (from: Reading, to: Reading, names: number) => Math.round((to.usedMemory - from.usedMemory) / names);

export function renderMemory(results: readonly MemoryResult[], version: string): string {
  const rows = results.map((r) => {
    const { names } = r.batch;
    return (
      `| ${r.batch.label} | ${names.toLocaleString('en')} | ${(r.afterRelease.keys - r.before.keys).toLocaleString('en')} | ` +
      `${perName(r.before, r.afterRelease, names)} | ${(r.afterRecordsExpired.keys - r.before.keys).toLocaleString('en')} | ` +
      `${perName(r.before, r.afterRecordsExpired, names)} | ${(r.runMs / 1000).toFixed(1)} s |`
    );
  });
  const left = results.flatMap((r) => r.leftBehind.map((k) => `| ${r.batch.nameLength} | \`${k.key}\` | ${k.type} | ${Math.round(k.ttlMs / 1000)} s | ${k.bytes} |`));
  return [
    MEMORY_HEADING,
    '',
    `Redis ${version}. Each name is acquired and released once (\`LockService.run\`, ${CONCURRENCY} at a time); used_memory (INFO memory) and`,
    'DBSIZE are read before, right after the last release, and once the release records (10 s) expired (after a full SCAN,',
    'which makes Redis reclaim the expired keys it has not sampled yet).',
    '',
    '| names | count | keys right after | bytes/name right after | keys after 10 s | bytes/name after 10 s | run |',
    '| :-- | --: | --: | --: | --: | --: | --: |',
    ...rows,
    '',
    'What stays once the release records expired (samples): the fence key of each name, until an hour after its last use.',
    '',
    '| name length | key | type | TTL left | MEMORY USAGE (bytes) |',
    '| --: | :-- | :-- | --: | --: |',
    ...left,
    '',
  ].join('\n');
}

/** Runs the memory batches on a server of their own and prints (and, when `write`, stores) the section. */
export async function runMemorySection(write: boolean, resultsFile: string, log: (line: string) => void): Promise<void> {
  const redis = await startBenchRedis();
  try {
    const results: MemoryResult[] = [];
    for (const batch of MEMORY_BATCHES) {
      log(`memory: ${batch.names} names of ${batch.nameLength} chars`);
      results.push(await measure(redis.url, batch));
    }
    const section = renderMemory(results, redis.version);
    process.stdout.write(`\n${section}\n`);
    if (write) writeSection(resultsFile, section);
  } finally {
    await redis.stop();
  }
}

/** Puts the section in place of its previous version, before the W6 section that ends the file. */
function writeSection(file: string, section: string): void {
  const previous = existsSync(file) ? readFileSync(file, 'utf8') : '';
  const start = previous.indexOf(MEMORY_HEADING);
  const w6 = previous.indexOf('## W6');
  if (start >= 0) {
    const end = w6 > start ? w6 : previous.length;
    writeFileSync(file, `${previous.slice(0, start)}${section}\n${previous.slice(end)}`);
  } else if (w6 >= 0) writeFileSync(file, `${previous.slice(0, w6)}${section}\n${previous.slice(w6)}`);
  else writeFileSync(file, `${previous.trimEnd()}\n\n${section}`);
}
