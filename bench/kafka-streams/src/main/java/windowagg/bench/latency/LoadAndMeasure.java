package windowagg.bench.latency;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.locks.LockSupport;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * The load and the measurement of one run, in one JVM apart from the system under test.
 *
 * <p>A consumer on the output topic starts first (from its beginning: the topic is new for every run). Then
 * the producer sends probe records (keys {@code probe0} .. {@code probe<markers - 1>}, a round every 200 ms) until
 * an output record has come for each of those keys: the system under test is up, and every one of its shuffle
 * partitions has processed something (64 keys leave none of a few partitions out but by a chance of about
 * 2^-63 each). Then it writes {@code --rate} records per second for
 * {@code --duration-s} seconds to the input topic after {@code --warmup-s} seconds in which the rate rises linearly
 * from 0 to {@code --rate}, paced in 1 ms ticks, each with value
 * {@code {"k": "k<i % keys>", "ts": <event time ms>, "sent": <wall clock ms at send>}} and event time = send time.
 *
 * <p>Every output record's {@code sent} field is the largest {@code sent} of the input rows in the window it
 * updates: the row whose arrival caused the update (rows arrive in time order). Its latency is the consumer's
 * wall clock when the record came in minus that. Records whose {@code sent} falls in the measured period
 * (after the warm-up) are counted. After the load, one end marker per key {@code end0} .. {@code end<markers - 1>};
 * the consumer waits until an output has come for each of them (or {@code --drain-timeout-s} passes): each
 * partition of the system's output is then past the load (outputs of different partitions interleave in any
 * order), and how long that took tells whether the system kept up. The consumer then goes on until no record
 * came for 500 ms (a micro-batch's output comes in no particular order: the markers may come before the rest).
 *
 * <p>Standard error gets {@code MEASURE_START} and {@code MEASURE_END} lines when the measured period starts
 * and ends (the caller samples CPU then); standard output gets one JSON line with the results.
 */
public final class LoadAndMeasure {

    /** A growable int array. */
    static final class IntList {
        int[] a = new int[1 << 16];
        int n;

        void add(int v) {
            if (n == a.length) {
                a = Arrays.copyOf(a, a.length * 2);
            }
            a[n++] = v;
        }
    }

    private final String bootstrap;
    private final String input;
    private final String output;
    private final long rate;
    private final long warmupMs;
    private final long durationMs;
    private final long keys;
    private final long readyTimeoutMs;
    private final long drainTimeoutMs;
    private final String linger;
    private final int markers;

    // the measured period in wall-clock (= event-time) milliseconds; set before the first load record
    private volatile long measureStart = Long.MAX_VALUE;
    private volatile long measureEnd = Long.MAX_VALUE;
    private volatile boolean stopConsumer;
    private volatile long outputsTotal;
    private volatile long unparsed;
    private volatile Throwable consumerError;
    // marker keys seen in the output (probe<i>, end<i>), written by the consumer thread
    private final AtomicLongArray probeSeen = new AtomicLongArray(256);
    private final AtomicLongArray endSeen = new AtomicLongArray(256);
    private volatile long maxGapMs;
    private volatile long lastArrivalMs;
    // written by the consumer thread only; read after it ended
    private final IntList sentRel = new IntList();
    private final IntList latency = new IntList();

    private LoadAndMeasure(Args a) {
        bootstrap = a.get("bootstrap");
        input = a.get("input");
        output = a.get("output");
        rate = a.getLong("rate", 1000);
        warmupMs = Math.round(a.getDouble("warmup-s", 5) * 1000);
        durationMs = Math.round(a.getDouble("duration-s", 20) * 1000);
        keys = a.getLong("keys", 1000);
        readyTimeoutMs = Math.round(a.getDouble("ready-timeout-s", 180) * 1000);
        drainTimeoutMs = Math.round(a.getDouble("drain-timeout-s", 30) * 1000);
        linger = a.get("linger-ms", "0");
        markers = (int) a.getLong("markers", 64);
    }

    public static void main(String[] argv) throws Exception {
        System.out.println(new LoadAndMeasure(new Args(argv)).run());
        System.exit(0);
    }

    private static final byte[] SENT = "\"sent\"".getBytes();
    private static final byte[] PROBE = "probe".getBytes();
    private static final byte[] END = "end".getBytes();

    /** The number after `prefix` when `key` is prefix + digits, else -1. */
    static int markerIndex(byte[] key, byte[] prefix) {
        if (key == null || key.length <= prefix.length || key.length > prefix.length + 6) {
            return -1;
        }
        for (int j = 0; j < prefix.length; j++) {
            if (key[j] != prefix[j]) {
                return -1;
            }
        }
        int x = 0;
        for (int k = prefix.length; k < key.length; k++) {
            if (key[k] < '0' || key[k] > '9') {
                return -1;
            }
            x = x * 10 + (key[k] - '0');
        }
        return x;
    }

    /** The value of the `"sent":` field in a JSON object's bytes, or Long.MIN_VALUE. */
    static long sentOf(byte[] v) {
        if (v == null) {
            return Long.MIN_VALUE;
        }
        outer:
        for (int i = 0; i + SENT.length <= v.length; i++) {
            for (int j = 0; j < SENT.length; j++) {
                if (v[i + j] != SENT[j]) {
                    continue outer;
                }
            }
            int k = i + SENT.length;
            while (k < v.length && (v[k] == ' ' || v[k] == ':' || v[k] == '"')) {
                k++;
            }
            long x = 0;
            int digits = 0;
            while (k < v.length && v[k] >= '0' && v[k] <= '9') {
                x = x * 10 + (v[k] - '0');
                k++;
                digits++;
            }
            return digits == 0 ? Long.MIN_VALUE : x;
        }
        return Long.MIN_VALUE;
    }

    private void consume(CountDownLatch assigned) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.FETCH_MIN_BYTES_CONFIG, "1");
        p.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, "50");
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "10000");
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_uncommitted");
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p)) {
            List<TopicPartition> parts = new ArrayList<>();
            for (PartitionInfo info : consumer.partitionsFor(output, Duration.ofSeconds(60))) {
                parts.add(new TopicPartition(output, info.partition()));
            }
            consumer.assign(parts);
            consumer.seekToBeginning(parts);
            for (TopicPartition tp : parts) {
                consumer.position(tp, Duration.ofSeconds(60));
            }
            assigned.countDown();
            long total = 0;
            long bad = 0;
            long lastArrival = Long.MIN_VALUE;
            long maxGap = 0;
            while (!stopConsumer) {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(20));
                if (records.isEmpty()) {
                    continue;
                }
                long now = System.currentTimeMillis();
                long start = measureStart;
                long end = measureEnd;
                // the longest pause between output arrivals while the measured period's records come in
                if (lastArrival != Long.MIN_VALUE && now > start && lastArrival < end) {
                    maxGap = Math.max(maxGap, now - Math.max(lastArrival, start));
                    maxGapMs = maxGap;
                }
                lastArrival = now;
                lastArrivalMs = now;
                for (ConsumerRecord<byte[], byte[]> r : records) {
                    total++;
                    int m = markerIndex(r.key(), PROBE);
                    if (m >= 0 && m < 256) {
                        probeSeen.set(m, 1);
                    }
                    m = markerIndex(r.key(), END);
                    if (m >= 0 && m < 256) {
                        endSeen.set(m, 1);
                    }
                    long sent = sentOf(r.value());
                    if (sent == Long.MIN_VALUE) {
                        bad++;
                        continue;
                    }
                    if (sent >= start && sent < end) {
                        sentRel.add((int) (sent - start));
                        latency.add((int) Math.max(0, now - sent));
                    }
                }
                outputsTotal = total;
                unparsed = bad;
            }
        } catch (Throwable t) {
            consumerError = t;
            assigned.countDown();
        }
    }

    private static String value(String k, long ts, long sent) {
        return "{\"k\":\"" + k + "\",\"ts\":" + ts + ",\"sent\":" + sent + "}";
    }

    private static boolean allSeen(AtomicLongArray seen, int n) {
        for (int i = 0; i < n; i++) {
            if (seen.get(i) == 0) {
                return false;
            }
        }
        return true;
    }

    /** One record per marker key prefix0 .. prefix<markers - 1>, all sent now. */
    private void sendMarkers(KafkaProducer<String, String> producer, String prefix) {
        for (int i = 0; i < markers; i++) {
            long now = System.currentTimeMillis();
            String k = prefix + i;
            producer.send(new ProducerRecord<>(input, k, value(k, now, now)));
        }
        producer.flush();
    }

    private String run() throws Exception {
        CountDownLatch assigned = new CountDownLatch(1);
        Thread consumerThread = new Thread(() -> consume(assigned), "output-consumer");
        consumerThread.setDaemon(true);
        consumerThread.start();
        assigned.await();
        if (consumerError != null) {
            return error("consumer: " + consumerError);
        }

        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.ACKS_CONFIG, "1");
        p.put(ProducerConfig.LINGER_MS_CONFIG, linger);
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "false");
        p.put(ProducerConfig.BUFFER_MEMORY_CONFIG, String.valueOf(128L << 20));
        AtomicLong sendErrors = new AtomicLong();
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            if (markers < 1 || markers > 256) {
                return error("--markers must be 1..256");
            }
            // probe rounds until the system under test has answered every probe key
            long t0 = System.currentTimeMillis();
            int probes = 0;
            while (!allSeen(probeSeen, markers)) {
                if (System.currentTimeMillis() - t0 > readyTimeoutMs) {
                    return error("no output for every probe key within " + readyTimeoutMs / 1000 + " s (" + probes
                            + " probe rounds sent, " + outputsTotal + " output records)");
                }
                if (consumerError != null) {
                    return error("consumer: " + consumerError);
                }
                sendMarkers(producer, "probe");
                probes++;
                Thread.sleep(200);
            }
            long readyMs = System.currentTimeMillis() - t0;

            // the load in 1 ms ticks: the warm-up's rate rising linearly from 0 (a system that has just started
            // compiles its code without building a backlog first), then rate records/s
            long total = scheduled(warmupMs + durationMs);
            long startWall = System.currentTimeMillis();
            long startNano = System.nanoTime();
            measureStart = startWall + warmupMs;
            measureEnd = startWall + warmupMs + durationMs;
            long measuredInputs = 0;
            boolean announcedStart = false;
            StringBuilder keyBuf = new StringBuilder(16);
            for (long i = 0; i < total; ) {
                long elapsed = System.nanoTime() - startNano;
                // every record scheduled up to the end of the current millisecond (record i at i / rate s)
                long due = Math.min(total, scheduled(elapsed / 1_000_000L + 1));
                while (i < due) {
                    long sent = System.currentTimeMillis();
                    keyBuf.setLength(0);
                    String k = keyBuf.append('k').append(i % keys).toString();
                    producer.send(new ProducerRecord<>(input, k, value(k, sent, sent)), (md, e) -> {
                        if (e != null) {
                            sendErrors.incrementAndGet();
                        }
                    });
                    if (sent >= measureStart && sent < measureEnd) {
                        measuredInputs++;
                        if (!announcedStart) {
                            announcedStart = true;
                            System.err.println("MEASURE_START " + sent);
                            System.err.flush();
                        }
                    }
                    i++;
                }
                long nextTick = (elapsed / 1_000_000L + 1) * 1_000_000L;
                long wait = nextTick - (System.nanoTime() - startNano);
                if (wait > 0) {
                    LockSupport.parkNanos(wait);
                }
            }
            producer.flush();
            long loadEnd = System.currentTimeMillis();
            System.err.println("MEASURE_END " + loadEnd);
            System.err.flush();
            long scheduleLagMs = loadEnd - (startWall + warmupMs + durationMs);

            // drain: until every end marker has come out (each output partition is past the load)
            sendMarkers(producer, "end");
            long drainMs = -1;
            while (System.currentTimeMillis() - loadEnd <= drainTimeoutMs) {
                if (allSeen(endSeen, markers)) {
                    drainMs = System.currentTimeMillis() - loadEnd;
                    // a micro-batch writes its rows in no particular order, the markers maybe first: the rest of
                    // its output comes right after, so the consumer goes on until 500 ms pass without a record
                    long settleStart = System.currentTimeMillis();
                    while (System.currentTimeMillis() - lastArrivalMs < 500
                            && System.currentTimeMillis() - settleStart < 10_000) {
                        Thread.sleep(20);
                    }
                    break;
                }
                if (consumerError != null) {
                    break;
                }
                Thread.sleep(5);
            }
            stopConsumer = true;
            consumerThread.join(10_000);
            if (consumerError != null) {
                return error("consumer: " + consumerError);
            }
            double measuredS = durationMs / 1000.0;
            return results(readyMs, probes, total, measuredInputs, measuredInputs / measuredS, scheduleLagMs,
                    sendErrors.get(), drainMs);
        }
    }

    /** Records due in the first `ms` milliseconds of the load: rate * t^2 / (2 * warm-up) during the warm-up's
     *  ramp, then rate per second. */
    long scheduled(long ms) {
        if (ms <= warmupMs) {
            return (long) ((double) rate * ms * ms / (2.0 * Math.max(1, warmupMs) * 1000.0));
        }
        return rate * warmupMs / 2000 + rate * (ms - warmupMs) / 1000;
    }

    private static String error(String message) {
        return "{\"status\": " + Json.quote("error: " + message) + "}";
    }

    /** The q-quantile (0..1) of sorted values, nearest rank. */
    static int quantile(int[] sorted, int n, double q) {
        if (n == 0) {
            return -1;
        }
        int idx = (int) Math.ceil(q * n) - 1;
        return sorted[Math.max(0, Math.min(n - 1, idx))];
    }

    private static String num(int v) {
        return v < 0 ? "null" : Integer.toString(v);
    }

    private String results(long readyMs, int probes, long inputsTotal, long measuredInputs, double rateAchieved,
                           long scheduleLagMs, long sendErrors, long drainMs) {
        int n = latency.n;
        int[] lat = Arrays.copyOf(latency.a, n);
        int[] rel = Arrays.copyOf(sentRel.a, n);
        int[] sorted = lat.clone();
        Arrays.sort(sorted);
        long sum = 0;
        for (int x : lat) {
            sum += x;
        }
        // per second of send time, and the first and last fifth of the measured period
        int seconds = (int) Math.max(1, (durationMs + 999) / 1000);
        IntList[] perSecond = new IntList[seconds];
        IntList first = new IntList();
        IntList last = new IntList();
        long fifth = durationMs / 5;
        for (int i = 0; i < n; i++) {
            int s = Math.min(seconds - 1, rel[i] / 1000);
            if (perSecond[s] == null) {
                perSecond[s] = new IntList();
            }
            perSecond[s].add(lat[i]);
            if (rel[i] < fifth) {
                first.add(lat[i]);
            } else if (rel[i] >= durationMs - fifth) {
                last.add(lat[i]);
            }
        }
        StringBuilder sb = new StringBuilder(4096);
        sb.append("{\"status\": \"ok\"");
        sb.append(", \"rate_target\": ").append(rate);
        sb.append(", \"warmup_s\": ").append(warmupMs / 1000.0);
        sb.append(", \"duration_s\": ").append(durationMs / 1000.0);
        sb.append(", \"keys\": ").append(keys);
        sb.append(", \"linger_ms\": ").append(linger);
        sb.append(", \"ready_ms\": ").append(readyMs);
        sb.append(", \"probes\": ").append(probes);
        sb.append(", \"inputs_total\": ").append(inputsTotal);
        sb.append(", \"inputs_measured\": ").append(measuredInputs);
        sb.append(", \"rate_achieved\": ").append(String.format(Locale.ROOT, "%.1f", rateAchieved));
        sb.append(", \"schedule_lag_ms\": ").append(scheduleLagMs);
        sb.append(", \"send_errors\": ").append(sendErrors);
        sb.append(", \"outputs_total\": ").append(outputsTotal);
        sb.append(", \"outputs_measured\": ").append(n);
        sb.append(", \"outputs_per_input\": ").append(
                measuredInputs == 0 ? "null" : String.format(Locale.ROOT, "%.3f", n / (double) measuredInputs));
        sb.append(", \"unparsed\": ").append(unparsed);
        sb.append(", \"drain_ms\": ").append(drainMs < 0 ? "null" : Long.toString(drainMs));
        sb.append(", \"drain_timeout_ms\": ").append(drainTimeoutMs);
        sb.append(", \"markers\": ").append(markers);
        sb.append(", \"max_output_gap_ms\": ").append(maxGapMs);
        sb.append(", \"p50_ms\": ").append(num(quantile(sorted, n, 0.50)));
        sb.append(", \"p90_ms\": ").append(num(quantile(sorted, n, 0.90)));
        sb.append(", \"p99_ms\": ").append(num(quantile(sorted, n, 0.99)));
        sb.append(", \"p999_ms\": ").append(num(quantile(sorted, n, 0.999)));
        sb.append(", \"max_ms\": ").append(num(n == 0 ? -1 : sorted[n - 1]));
        sb.append(", \"mean_ms\": ").append(n == 0 ? "null" : String.format(Locale.ROOT, "%.2f", sum / (double) n));
        int[] f = Arrays.copyOf(first.a, first.n);
        Arrays.sort(f);
        int[] l = Arrays.copyOf(last.a, last.n);
        Arrays.sort(l);
        sb.append(", \"p50_first_fifth_ms\": ").append(num(quantile(f, f.length, 0.5)));
        sb.append(", \"p50_last_fifth_ms\": ").append(num(quantile(l, l.length, 0.5)));
        // the distribution: every percentile, then the tail
        sb.append(", \"quantiles\": [");
        double[] qs = new double[108];
        for (int i = 0; i <= 100; i++) {
            qs[i] = i / 100.0;
        }
        double[] tail = {0.995, 0.998, 0.999, 0.9995, 0.9999, 0.99995, 0.99999};
        System.arraycopy(tail, 0, qs, 101, tail.length);
        Arrays.sort(qs);
        for (int i = 0; i < qs.length; i++) {
            if (i > 0) {
                sb.append(", ");
            }
            sb.append('[').append(qs[i]).append(", ").append(num(quantile(sorted, n, qs[i]))).append(']');
        }
        sb.append(']');
        sb.append(", \"per_second\": [");
        for (int s = 0; s < seconds; s++) {
            if (s > 0) {
                sb.append(", ");
            }
            IntList x = perSecond[s];
            int m = x == null ? 0 : x.n;
            int[] xs = m == 0 ? new int[0] : Arrays.copyOf(x.a, m);
            Arrays.sort(xs);
            sb.append('[').append(s).append(", ").append(m).append(", ").append(num(quantile(xs, m, 0.5)))
                    .append(", ").append(num(quantile(xs, m, 0.99))).append(", ").append(num(m == 0 ? -1 : xs[m - 1]))
                    .append(']');
        }
        sb.append("]}");
        return sb.toString();
    }
}
