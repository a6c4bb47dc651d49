package interop;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import org.redisson.Redisson;
import org.redisson.RedissonMultiLock;
import org.redisson.RedissonRedLock;
import org.redisson.api.RBucket;
import org.redisson.api.RFencedLock;
import org.redisson.api.RLock;
import org.redisson.api.RPermitExpirableSemaphore;
import org.redisson.api.RSemaphore;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;
import org.redisson.config.ClusterServersConfig;
import org.redisson.config.Config;
import org.redisson.config.ShardedSubscriptionMode;

/**
 * Drives a real Redisson for the Node interop tests, over a line protocol on stdin/stdout.
 *
 * <p>Request, one per line, words separated by single spaces:
 * {@code <id> <holder> <command> [args...]}. Reply, one per line, tab-separated:
 * {@code <id>\tok[\t<value>]} or {@code <id>\terr\t<ExceptionClass>: <message>}. Replies come in the
 * order commands finish, not the order they were sent: the id pairs them.
 *
 * <p>Redisson's locks belong to the Java thread that took them. Every holder id is therefore one
 * single-thread executor, created on first use: the holder's commands run one after another on
 * that thread (a {@code lock} that waits holds up the holder's later commands, as it would hold up
 * a Java thread), while different holders run at the same time. The lock owner Redisson writes is
 * {@code <clientId>:<threadId>}; the {@code owner} command tells it.
 *
 * <p>On start the program prints {@code ready\t<clientId>\t<redissonVersion>}, once Redisson is
 * connected. On {@code quit} or at the end of stdin it shuts Redisson down and exits 0.
 */
public final class RedissonDriver {
    private static final PrintStream OUT = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true, StandardCharsets.UTF_8);
    private static final Map<String, Holder> HOLDERS = new ConcurrentHashMap<>();
    private static RedissonClient redisson;
    /** RedLock masters: one extra client per address (standalone), made on first use. */
    private static final Map<String, RedissonClient> MASTERS = new ConcurrentHashMap<>();
    /** The RedissonRedLock last taken under each name, for redUnlock. */
    private static final Map<String, RedissonRedLock> RED_LOCKS = new ConcurrentHashMap<>();
    private static long watchdogMs;

    /** One holder: one thread, and its id as Redisson sees it. */
    private static final class Holder {
        final ExecutorService executor;
        volatile long threadId = -1;

        Holder(String name) {
            executor = Executors.newSingleThreadExecutor(runnable -> {
                Thread thread = new Thread(runnable, "holder-" + name);
                thread.setDaemon(true);
                threadId = thread.getId();
                return thread;
            });
        }
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> options = parseArgs(args);
        String address = option(options, "address", "REDISSON_ADDRESS", null);
        String cluster = option(options, "cluster", "REDISSON_CLUSTER", null);
        long watchdog = Long.parseLong(option(options, "watchdog", "REDISSON_WATCHDOG_MS", "30000"));
        watchdogMs = watchdog;
        String sharded = option(options, "sharded", "REDISSON_SHARDED", "auto");
        String fairWait = option(options, "fair-wait", "REDISSON_FAIR_WAIT_MS", null);

        Config config = new Config();
        config.setLockWatchdogTimeout(watchdog);
        if (fairWait != null) config.setFairLockWaitTimeout(Long.parseLong(fairWait));
        if (cluster != null) {
            ClusterServersConfig servers = config.useClusterServers();
            for (String node : cluster.split(",")) servers.addNodeAddress(node.trim());
            servers.setShardedSubscriptionMode(ShardedSubscriptionMode.valueOf(sharded.toUpperCase()));
        } else {
            config.useSingleServer().setAddress(address != null ? address : "redis://127.0.0.1:6379");
        }
        try {
            redisson = Redisson.create(config);
        } catch (Throwable error) {
            OUT.println("failed\t" + describe(error));
            System.exit(2);
            return;
        }
        OUT.println("ready\t" + redisson.getId() + "\t" + builtAgainst());

        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            line = line.trim();
            if (line.isEmpty()) continue;
            String[] words = line.split(" +");
            String id = words[0];
            if (words.length < 3) {
                reply(id, false, "IllegalArgumentException: expected <id> <holder> <command> [args...]");
                continue;
            }
            if (words[2].equals("quit")) {
                quit(id);
                return;
            }
            Holder holder = HOLDERS.computeIfAbsent(words[1], Holder::new);
            String[] rest = new String[words.length - 3];
            System.arraycopy(words, 3, rest, 0, rest.length);
            holder.executor.execute(() -> {
                try {
                    reply(id, true, run(holder, words[2], rest));
                } catch (Throwable error) {
                    reply(id, false, describe(error));
                }
            });
        }
        quit(null);
    }

    private static void quit(String id) {
        for (Holder holder : HOLDERS.values()) holder.executor.shutdownNow();
        for (RedissonClient master : MASTERS.values()) {
            try {
                master.shutdown();
            } catch (Throwable ignored) {
                // exiting anyway
            }
        }
        try {
            redisson.shutdown();
        } catch (Throwable ignored) {
            // exiting anyway
        }
        if (id != null) reply(id, true, null);
        OUT.flush();
        System.exit(0);
    }

    /** Runs one command on the holder's thread; the result is the reply's value (null: none). */
    private static String run(Holder holder, String command, String[] a) throws Exception {
        switch (command) {
            // Identity: Redisson's lock owner field for this holder is <clientId>:<threadId>.
            case "threadId":
                return String.valueOf(Thread.currentThread().getId());
            case "owner":
                return redisson.getId() + ":" + Thread.currentThread().getId();
            case "sleep":
                Thread.sleep(ms(a, 0));
                return null;

            // RLock
            case "lock":
                lock(redisson.getLock(name(a)), a, 1);
                return null;
            case "tryLock":
                return String.valueOf(tryLock(redisson.getLock(name(a)), a));
            case "unlock":
                redisson.getLock(name(a)).unlock();
                return null;
            case "forceUnlock":
                return String.valueOf(redisson.getLock(name(a)).forceUnlock());
            case "isLocked":
                return String.valueOf(redisson.getLock(name(a)).isLocked());
            case "isHeld":
                return String.valueOf(redisson.getLock(name(a)).isHeldByCurrentThread());
            case "holdCount":
                return String.valueOf(redisson.getLock(name(a)).getHoldCount());
            case "remainTtl":
                return String.valueOf(redisson.getLock(name(a)).remainTimeToLive());

            // RFairLock
            case "fairLock":
                lock(redisson.getFairLock(name(a)), a, 1);
                return null;
            case "fairTryLock":
                return String.valueOf(tryLock(redisson.getFairLock(name(a)), a));
            case "fairUnlock":
                redisson.getFairLock(name(a)).unlock();
                return null;

            // RReadWriteLock
            case "readLock":
                lock(redisson.getReadWriteLock(name(a)).readLock(), a, 1);
                return null;
            case "readTryLock":
                return String.valueOf(tryLock(redisson.getReadWriteLock(name(a)).readLock(), a));
            case "readUnlock":
                redisson.getReadWriteLock(name(a)).readLock().unlock();
                return null;
            case "writeLock":
                lock(redisson.getReadWriteLock(name(a)).writeLock(), a, 1);
                return null;
            case "writeTryLock":
                return String.valueOf(tryLock(redisson.getReadWriteLock(name(a)).writeLock(), a));
            case "writeUnlock":
                redisson.getReadWriteLock(name(a)).writeLock().unlock();
                return null;

            // RFencedLock: the reply is the token (null when a tryLock gave up).
            case "fencedLock": {
                RFencedLock lock = redisson.getFencedLock(name(a));
                Long token = a.length > 1 ? lock.lockAndGetToken(ms(a, 1), TimeUnit.MILLISECONDS) : lock.lockAndGetToken();
                return String.valueOf(token);
            }
            case "fencedTryLock": {
                RFencedLock lock = redisson.getFencedLock(name(a));
                Long token = a.length > 2
                        ? lock.tryLockAndGetToken(ms(a, 1), ms(a, 2), TimeUnit.MILLISECONDS)
                        : lock.tryLockAndGetToken(ms(a, 1), TimeUnit.MILLISECONDS);
                return String.valueOf(token);
            }
            case "fencedUnlock":
                redisson.getFencedLock(name(a)).unlock();
                return null;
            case "fencedToken":
                return String.valueOf(redisson.getFencedLock(name(a)).getToken());

            // RSemaphore
            case "semTrySetPermits":
                return String.valueOf(redisson.getSemaphore(name(a)).trySetPermits(count(a, 1)));
            case "semAddPermits":
                redisson.getSemaphore(name(a)).addPermits(count(a, 1));
                return null;
            case "semAcquire":
                redisson.getSemaphore(name(a)).acquire(count(a, 1));
                return null;
            case "semTryAcquire": {
                RSemaphore semaphore = redisson.getSemaphore(name(a));
                return String.valueOf(semaphore.tryAcquire(count(a, 1), ms(a, 2), TimeUnit.MILLISECONDS));
            }
            case "semRelease":
                redisson.getSemaphore(name(a)).release(count(a, 1));
                return null;
            case "semAvailable":
                return String.valueOf(redisson.getSemaphore(name(a)).availablePermits());

            // RPermitExpirableSemaphore: acquire replies the permit id (hex).
            case "pesTrySetPermits":
                return String.valueOf(redisson.getPermitExpirableSemaphore(name(a)).trySetPermits(count(a, 1)));
            case "pesAcquire": {
                RPermitExpirableSemaphore semaphore = redisson.getPermitExpirableSemaphore(name(a));
                return a.length > 1 ? semaphore.acquire(ms(a, 1), TimeUnit.MILLISECONDS) : semaphore.acquire();
            }
            case "pesTryAcquire": {
                // tryAcquire(waitMs[, leaseMs]): the permit id, or "null" when none came within the wait.
                RPermitExpirableSemaphore semaphore = redisson.getPermitExpirableSemaphore(name(a));
                String id = a.length > 2
                        ? semaphore.tryAcquire(ms(a, 1), ms(a, 2), TimeUnit.MILLISECONDS)
                        : semaphore.tryAcquire(ms(a, 1), TimeUnit.MILLISECONDS);
                return String.valueOf(id);
            }
            case "pesRelease":
                redisson.getPermitExpirableSemaphore(name(a)).release(a[1]);
                return null;
            case "pesAvailable":
                return String.valueOf(redisson.getPermitExpirableSemaphore(name(a)).availablePermits());

            // RedissonRedLock over getLock(name) of one client per master address (a, b, c: standalone
            // servers); leaseMs -1 = the watchdog. redUnlock releases the one redLock/redTryLock took.
            case "redLock": {
                RedissonRedLock lock = redLock(name(a), a, 2);
                long lease = ms(a, 1);
                if (lease < 0) lock.lockInterruptibly();
                else lock.lockInterruptibly(lease, TimeUnit.MILLISECONDS);
                return null;
            }
            case "redTryLock": {
                RedissonRedLock lock = redLock(name(a), a, 3);
                return String.valueOf(lock.tryLock(ms(a, 1), ms(a, 2), TimeUnit.MILLISECONDS));
            }
            case "redUnlock": {
                RedissonRedLock lock = RED_LOCKS.get(name(a));
                if (lock == null) throw new IllegalStateException("no redLock taken under " + name(a));
                lock.unlock();
                return null;
            }

            // RedissonMultiLock over getLock(n) of the main client for each of n1,n2,... (list order).
            case "multiLock": {
                RedissonMultiLock lock = multiLock(a);
                if (a.length > 1) lock.lock(ms(a, 1), TimeUnit.MILLISECONDS);
                else lock.lockInterruptibly();
                return null;
            }
            case "multiTryLock": {
                RedissonMultiLock lock = multiLock(a);
                if (a.length > 2) return String.valueOf(lock.tryLock(ms(a, 1), ms(a, 2), TimeUnit.MILLISECONDS));
                return String.valueOf(lock.tryLock(ms(a, 1), TimeUnit.MILLISECONDS));
            }
            case "multiUnlock":
                multiLock(a).unlock();
                return null;

            // A lost-update probe: GET then SET through RBucket, not atomic on purpose. Run it under a
            // lock; a counter short of the number of increments means two holders overlapped.
            case "incr": {
                RBucket<String> bucket = redisson.getBucket(name(a), StringCodec.INSTANCE);
                String value = bucket.get();
                long next = (value == null ? 0 : Long.parseLong(value)) + 1;
                if (a.length > 1) Thread.sleep(ms(a, 1)); // widens the window between GET and SET
                bucket.set(String.valueOf(next));
                return String.valueOf(next);
            }
            case "get":
                return redisson.getBucket(name(a), StringCodec.INSTANCE).get() instanceof String s ? s : "null";

            default:
                throw new IllegalArgumentException("unknown command " + command);
        }
    }

    /** A RedissonRedLock of {@code name} over the masters listed (comma-separated) at {@code at}; kept for redUnlock. */
    private static RedissonRedLock redLock(String name, String[] a, int at) {
        if (a.length <= at) throw new IllegalArgumentException("missing master addresses (argument " + (at + 1) + ")");
        String[] addresses = a[at].split(",");
        RLock[] locks = new RLock[addresses.length];
        for (int i = 0; i < addresses.length; i++) locks[i] = master(addresses[i].trim()).getLock(name);
        RedissonRedLock lock = new RedissonRedLock(locks);
        RED_LOCKS.put(name, lock);
        return lock;
    }

    /** The RedLock client of one master address, made once (same watchdog as the main client). */
    private static RedissonClient master(String address) {
        return MASTERS.computeIfAbsent(address, addr -> {
            Config config = new Config();
            config.setLockWatchdogTimeout(watchdogMs);
            config.useSingleServer().setAddress(addr).setConnectionMinimumIdleSize(2).setConnectionPoolSize(4)
                    .setSubscriptionConnectionMinimumIdleSize(1).setSubscriptionConnectionPoolSize(2);
            return Redisson.create(config);
        });
    }

    /** A RedissonMultiLock over getLock(n) of the main client, for the names (comma-separated) in a[0], in that order. */
    private static RedissonMultiLock multiLock(String[] a) {
        String[] names = name(a).split(",");
        RLock[] locks = new RLock[names.length];
        for (int i = 0; i < names.length; i++) locks[i] = redisson.getLock(names[i]);
        return new RedissonMultiLock(locks);
    }

    /** lock(name) with the watchdog, or lock(name, leaseMs) when a lease is given at {@code at}. */
    private static void lock(RLock lock, String[] a, int at) throws InterruptedException {
        if (a.length > at) lock.lock(ms(a, at), TimeUnit.MILLISECONDS);
        else lock.lockInterruptibly();
    }

    /** tryLock(name, waitMs) with the watchdog, or tryLock(name, waitMs, leaseMs). */
    private static boolean tryLock(RLock lock, String[] a) throws InterruptedException {
        if (a.length > 2) return lock.tryLock(ms(a, 1), ms(a, 2), TimeUnit.MILLISECONDS);
        return lock.tryLock(ms(a, 1), TimeUnit.MILLISECONDS);
    }

    private static String name(String[] a) {
        if (a.length < 1) throw new IllegalArgumentException("missing name");
        return a[0];
    }

    private static long ms(String[] a, int at) {
        if (a.length <= at) throw new IllegalArgumentException("missing argument " + (at + 1));
        return Long.parseLong(a[at]);
    }

    private static int count(String[] a, int at) {
        return (int) ms(a, at);
    }

    private static synchronized void reply(String id, boolean ok, String value) {
        StringBuilder line = new StringBuilder(id).append('\t').append(ok ? "ok" : "err");
        if (value != null) line.append('\t').append(value.replace('\t', ' ').replace('\n', ' ').replace('\r', ' '));
        OUT.println(line);
    }

    private static String describe(Throwable error) {
        Throwable cause = error;
        while (cause.getCause() != null && cause.getMessage() == null) cause = cause.getCause();
        return cause.getClass().getSimpleName() + ": " + cause.getMessage();
    }

    /** The Redisson version this jar was built against (driver.properties). */
    static String builtAgainst() {
        Properties properties = new Properties();
        try (InputStream in = RedissonDriver.class.getResourceAsStream("/driver.properties")) {
            if (in != null) properties.load(in);
        } catch (IOException ignored) {
            // unknown then
        }
        return properties.getProperty("redisson.version", "unknown");
    }

    private static Map<String, String> parseArgs(String[] args) {
        Map<String, String> options = new ConcurrentHashMap<>();
        List<String> list = new ArrayList<>(List.of(args));
        for (int i = 0; i < list.size(); i++) {
            String arg = list.get(i);
            if (!arg.startsWith("--")) throw new IllegalArgumentException("unexpected argument " + arg);
            int eq = arg.indexOf('=');
            if (eq > 0) options.put(arg.substring(2, eq), arg.substring(eq + 1));
            else if (i + 1 < list.size()) options.put(arg.substring(2), list.get(++i));
            else throw new IllegalArgumentException("missing value for " + arg);
        }
        return options;
    }

    private static String option(Map<String, String> options, String name, String env, String fallback) {
        String value = options.get(name);
        if (value == null) value = System.getenv(env);
        return value != null && !value.isEmpty() ? value : fallback;
    }
}
