package interop;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

import org.redisson.Redisson;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

/**
 * The Java Redisson anchor of the Node bench (bench/adapters/redisson-java.ts): the bench's W1 and W4
 * (bench/workloads/w1-uncontended.ts, w4-handoff.ts) measured by Redisson itself, in this JVM, with
 * the same keys, sizes and stamps. Run as {@code java -cp redisson-driver.jar interop.RedissonBench
 * <w1|w4|cost> --address redis://127.0.0.1:<port> [--name value...]}.
 *
 * <p>Every locked call is what a Redisson user writes and what the bench's {@code ours-run} does:
 * {@code tryLock(5000 ms)} with the watchdog (Redisson's default 30 s), the body, {@code unlock()} in
 * {@code finally}, one {@code getLock(name)} per call.
 *
 * <p>Protocol, stdout lines: {@code ready} once connected and warmed up (the JIT: a loop of
 * uncontended calls until the JIT compiler has been quiet for {@code --jit-quiet-ms}, at most
 * {@code --jit-max-ms}: Redisson's whole acquire/release path compiled before anything is timed),
 * then {@code result\t<json>}. W4 also reads stdin, where the bench relays the other JVM's lines:
 * {@code go} starts the hand-offs, {@code peer <i>} says the other process holds the lock for
 * hand-off i and the next must start waiting; it writes {@code peer <i>} for the other JVM the same
 * way. Stamps are {@code System.nanoTime()}: CLOCK_MONOTONIC on Linux,
 * the clock the Node side stamps with ({@code process.hrtime}).
 *
 * <p>{@code cost} (bench/workloads/redisson-java-cost.ts) is the cost section's uncontended call, an
 * {@code RLock} {@code lock()} + {@code unlock()} ({@code --op lock}) or {@code tryLock(0 ms)} +
 * {@code unlock()} ({@code --op trylock}), both with the watchdog, on names never used before. After
 * {@code ready} it reads {@code window <phase> <count>} lines from stdin, runs {@code count} operations
 * on {@code cost:<phase>:<i>} for each and answers {@code window\t<json>} (its wall time and this
 * JVM's CPU time); {@code end} ends it. The bench measures Redis around each window.
 */
public final class RedissonBench {
    private static final PrintStream OUT = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true, StandardCharsets.UTF_8);
    /** The library's {@code defaultWaitTime}: how long a call waits before giving up (bench/adapters/adapter.ts WAIT_MS). */
    private static final long WAIT_MS = 5_000;
    /** W1's cycling keys, as bench/workloads/w1-uncontended.ts (KEYS); `run` prefixes `bench:`. */
    private static final int W1_KEYS = 64;
    private static final String W4_KEY = "bench:w4:key";

    private RedissonBench() {}

    public static void main(String[] args) throws Exception {
        if (args.length < 1) throw new IllegalArgumentException("usage: RedissonBench <w1|w4|cost> --address redis://host:port [--name value...]");
        Map<String, String> options = parse(args);
        Config config = new Config();
        config.useSingleServer().setAddress(options.getOrDefault("address", "redis://127.0.0.1:6379"));
        RedissonClient redisson = Redisson.create(config);
        try {
            String result;
            switch (args[0]) {
                case "w1":
                    result = w1(redisson, options);
                    break;
                case "w4":
                    result = w4(redisson, options);
                    break;
                case "cost":
                    result = cost(redisson, options);
                    break;
                default:
                    throw new IllegalArgumentException("unknown workload " + args[0]);
            }
            // Which Redisson and JVM measured, for the report.
            String runtime = ",\"redisson\":\"" + RedissonDriver.builtAgainst() + "\",\"jvm\":\"" + System.getProperty("java.vm.name") + " "
                    + System.getProperty("java.runtime.version") + "\"}";
            OUT.println("result\t" + result.substring(0, result.length() - 1) + runtime);
        } finally {
            redisson.shutdown();
        }
        System.exit(0);
    }

    /** One locked call, the way a Redisson user writes it; false when the wait ran out (a give-up). */
    private static boolean run(RedissonClient redisson, String name, Runnable body) throws InterruptedException {
        RLock lock = redisson.getLock(name);
        if (!lock.tryLock(WAIT_MS, TimeUnit.MILLISECONDS)) return false;
        try {
            body.run();
        } finally {
            lock.unlock();
        }
        return true;
    }

    private static void call(RedissonClient redisson, String name) throws InterruptedException {
        if (!run(redisson, name, () -> {})) throw new IllegalStateException("uncontended lock not acquired: " + name);
    }

    /** One uncontended operation on a lock name. */
    private interface Op {
        void run(RedissonClient redisson, String name) throws InterruptedException;
    }

    /**
     * The JIT warm-up: uncontended calls on `prefix<n>` (64 cycling keys) until the JIT compiler has
     * been quiet for `quietMs` (no compilation time added: Redisson's path compiled, C2 included),
     * after at least `minOps` calls, at most `maxMs`. Returns {calls, ms}.
     */
    private static double[] warmUp(RedissonClient redisson, String prefix, long minOps, long quietMs, long maxMs) throws InterruptedException {
        return warmUp(redisson, RedissonBench::call, prefix, minOps, quietMs, maxMs);
    }

    /** The same, warming up `op`: the path the window will run. */
    private static double[] warmUp(RedissonClient redisson, Op op, String prefix, long minOps, long quietMs, long maxMs) throws InterruptedException {
        CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
        double started = nowMs();
        double lastCompiled = started;
        long compileMs = jit.getTotalCompilationTime();
        long done = 0;
        for (;;) {
            op.run(redisson, prefix + (done % W1_KEYS));
            done++;
            if (done % 100 != 0) continue;
            double now = nowMs();
            long compiled = jit.getTotalCompilationTime();
            if (compiled != compileMs) {
                compileMs = compiled;
                lastCompiled = now;
            }
            if ((done >= minOps && now - lastCompiled >= quietMs) || now - started >= maxMs) return new double[] {done, now - started};
        }
    }

    private static double nowMs() {
        return System.nanoTime() / 1e6;
    }

    /** CPU time of this JVM (every thread: caller, Netty, JIT, GC), in microseconds. */
    private static double cpuUs() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime() / 1e3;
    }

    /** W1: one thread, acquire + release back to back on 64 cycling keys; the figures of W1Result. */
    private static String w1(RedissonClient redisson, Map<String, String> options) throws InterruptedException {
        long ops = number(options, "ops");
        double[] warmup = warmUp(redisson, "bench:w1:", number(options, "warmup"), number(options, "jit-quiet-ms"), number(options, "jit-max-ms"));
        OUT.println("ready");
        double[] latencies = new double[(int) ops];
        double cpuBefore = cpuUs();
        double started = nowMs();
        for (int i = 0; i < ops; i++) {
            double opStarted = nowMs();
            call(redisson, "bench:w1:" + (i % W1_KEYS));
            latencies[i] = nowMs() - opStarted;
        }
        double elapsed = nowMs() - started;
        double cpu = cpuUs() - cpuBefore;
        Arrays.sort(latencies);
        return "{\"ops\":" + ops + ",\"opsPerSec\":" + (ops * 1000.0 / elapsed) + ",\"p50Ms\":" + median(latencies)
                + ",\"p99Ms\":" + nearestRank(latencies, 99) + ",\"cpuUsPerOp\":" + (cpu / ops) + ",\"warmupOps\":" + (long) warmup[0]
                + ",\"warmupMs\":" + warmup[1] + "}";
    }

    /**
     * W4, one of two JVMs (role 0 holds first): bench/workloads/w4-handoff.ts's w4Child, step for
     * step. The holder announces hand-off i, holds 10-20 ms, stamps the release and unlocks; the
     * waiter stamps when it starts asking and on entry. The first `warmup-handoffs` hand-offs warm up
     * the wait path (subscribe, wake, unsubscribe) and are left out by the bench.
     */
    private static String w4(RedissonClient redisson, Map<String, String> options) throws Exception {
        int role = (int) number(options, "role");
        int handoffs = (int) (number(options, "handoffs") + number(options, "warmup-handoffs"));
        long holdMs = number(options, "hold-ms");
        long holdJitterMs = number(options, "hold-jitter-ms");
        double[] warmup = warmUp(redisson, "bench:w4warm:" + role + ":", 0, number(options, "jit-quiet-ms"), number(options, "jit-max-ms"));

        Double[] releasedAt = new Double[handoffs];
        Double[] acquiredAt = new Double[handoffs];
        Double[] askedAt = new Double[handoffs];
        int giveUps = 0;
        BlockingQueue<Integer> peers = new LinkedBlockingQueue<>();
        CountDownLatch go = new CountDownLatch(1);
        Thread reader = new Thread(() -> readParent(peers, go), "bench-parent");
        reader.setDaemon(true);
        reader.start();

        OUT.println("ready");
        go.await();
        if (role == 0) run(redisson, W4_KEY, () -> holdFor(0, holdMs, holdJitterMs, releasedAt));
        for (;;) {
            int i = peers.take();
            if (i >= handoffs) break;
            askedAt[i] = nowMs();
            for (;;) {
                boolean acquired = run(redisson, W4_KEY, () -> {
                    acquiredAt[i] = nowMs();
                    if (i + 1 < handoffs) holdFor(i + 1, holdMs, holdJitterMs, releasedAt);
                    else OUT.println("peer " + handoffs);
                });
                if (acquired) break;
                giveUps++;
            }
            if (i + 1 >= handoffs) break;
        }
        return "{\"releasedAt\":" + json(releasedAt) + ",\"acquiredAt\":" + json(acquiredAt) + ",\"askedAt\":" + json(askedAt)
                + ",\"giveUps\":" + giveUps
                + ",\"warmupOps\":" + (long) warmup[0] + ",\"warmupMs\":" + warmup[1] + "}";
    }

    /** The cost section's `lock()` + `unlock()`: blocks until held (at once, uncontended), watchdog lease. */
    private static void lockUnlock(RedissonClient redisson, String name) {
        RLock lock = redisson.getLock(name);
        lock.lock();
        lock.unlock();
    }

    /** The cost section's `tryLock(0 ms)` + `unlock()`: no wait, watchdog lease. */
    private static void tryLockUnlock(RedissonClient redisson, String name) throws InterruptedException {
        RLock lock = redisson.getLock(name);
        if (!lock.tryLock(0, TimeUnit.MILLISECONDS)) throw new IllegalStateException("uncontended lock not acquired: " + name);
        lock.unlock();
    }

    /**
     * The cost section's subject: JIT warm-up on `op`, then the windows the bench asks for on stdin
     * (`window <phase> <count>`, answered `window\t{ops, wallMs, cpuUs}`) until `end`. Names are
     * never used before: `cost:<phase>:<i>`, as bench/workloads/cost.ts's `sequential`.
     */
    private static String cost(RedissonClient redisson, Map<String, String> options) throws Exception {
        String kind = options.getOrDefault("op", "lock");
        Op op;
        if (kind.equals("lock")) op = RedissonBench::lockUnlock;
        else if (kind.equals("trylock")) op = RedissonBench::tryLockUnlock;
        else throw new IllegalArgumentException("unknown --op " + kind);
        double[] warmup = warmUp(redisson, op, "cost:warmup:", number(options, "warmup"), number(options, "jit-quiet-ms"), number(options, "jit-max-ms"));
        OUT.println("ready");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null && !line.equals("end")) {
            String[] words = line.trim().split(" ");
            if (words.length != 3 || !words[0].equals("window")) throw new IllegalArgumentException("expected window <phase> <count>: " + line);
            int count = Integer.parseInt(words[2]);
            double cpuBefore = cpuUs();
            double started = nowMs();
            for (int i = 0; i < count; i++) op.run(redisson, "cost:" + words[1] + ":" + i);
            double wallMs = nowMs() - started;
            double cpu = cpuUs() - cpuBefore;
            OUT.println("window\t{\"ops\":" + count + ",\"wallMs\":" + wallMs + ",\"cpuUs\":" + cpu + "}");
        }
        return "{\"warmupOps\":" + (long) warmup[0] + ",\"warmupMs\":" + warmup[1] + "}";
    }

    /** Holding the lock: announce hand-off i, hold a while, stamp the release. */
    private static void holdFor(int i, long holdMs, long holdJitterMs, Double[] releasedAt) {
        OUT.println("peer " + i);
        LockSupport.parkNanos((long) ((holdMs + ThreadLocalRandom.current().nextDouble() * holdJitterMs) * 1e6));
        releasedAt[i] = nowMs();
    }

    private static void readParent(BlockingQueue<Integer> peers, CountDownLatch go) {
        try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            String line;
            while ((line = in.readLine()) != null) {
                if (line.equals("go")) go.countDown();
                else if (line.startsWith("peer ")) peers.add(Integer.parseInt(line.substring(5).trim()));
            }
        } catch (Exception ignored) {
            // the bench went away: nothing left to measure
        }
        // stdin closed: the bench is gone, so is the run
        System.exit(3);
    }

    private static double median(double[] ordered) {
        if (ordered.length == 0) return Double.NaN;
        int middle = ordered.length >> 1;
        return ordered.length % 2 == 1 ? ordered[middle] : (ordered[middle - 1] + ordered[middle]) / 2;
    }

    /** Nearest rank, as bench/harness/stats.ts percentile. */
    private static double nearestRank(double[] ordered, double p) {
        if (ordered.length == 0) return Double.NaN;
        int rank = (int) Math.min(ordered.length - 1, Math.max(0, Math.ceil(p / 100 * ordered.length) - 1));
        return ordered[rank];
    }

    private static String json(Double[] values) {
        StringBuilder out = new StringBuilder("[");
        for (int i = 0; i < values.length; i++) {
            if (i > 0) out.append(',');
            out.append(values[i] == null ? "null" : values[i].toString());
        }
        return out.append(']').toString();
    }

    private static long number(Map<String, String> options, String name) {
        String value = options.get(name);
        if (value == null) throw new IllegalArgumentException("missing --" + name);
        return Long.parseLong(value);
    }

    private static Map<String, String> parse(String[] args) {
        Map<String, String> options = new HashMap<>();
        for (int i = 1; i < args.length; i += 2) {
            if (!args[i].startsWith("--") || i + 1 >= args.length) throw new IllegalArgumentException("expected --name value at " + args[i]);
            options.put(args[i].substring(2), args[i + 1]);
        }
        return options;
    }
}
