package windowagg.bench;

import java.io.BufferedReader;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.stream.Stream;

import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.DoubleSerializer;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.Serializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.utils.AppInfoParser;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.kstream.Aggregator;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Initializer;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Merger;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.SlidingWindows;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.WindowedSerdes;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.WindowStore;

/**
 * Kafka Streams side of bench/kafka_compare.py.
 *
 * <p>Reads events from a CSV file (key, event time in epoch milliseconds, value; the file's order is the
 * arrival order) and pipes them through a {@link TopologyTestDriver} (one thread, one partition) whose
 * topology aggregates count, sum and max of the value per key over KIP-450 sliding windows or KIP-94
 * session windows, suppressed until the windows close ({@code Suppressed.untilWindowCloses(unbounded())}),
 * into an output topic. After the last event it pipes one far-future event of a key no event has ("-1"),
 * which moves stream time past every window of the real keys so all of them close and are emitted.
 *
 * <p>The aggregation's store is in-memory ({@code Stores.inMemoryWindowStore} / {@code inMemorySessionStore},
 * with the retention the DSL would give its default store) or the DSL's default persistent (RocksDB) store.
 * By default the stores have neither a changelog topic nor a record cache: the test driver keeps every
 * record produced to a changelog topic in memory, and it commits (flushes the cache) after every input
 * record, so the cache could not absorb repeated updates, while its range scans over a segmented window
 * store copy the keys of every key's cached windows, which made a sliding-window run over 1,000 keys
 * take minutes per 10,000 events. {@code --changelog} and {@code --caching} turn them back on.
 *
 * <p>Before the timed run, the same JVM runs the first {@code --warmup-events} events through a throwaway
 * driver (JIT warm-up). The timed run counts the wall time and the CPU time of this thread
 * (ThreadMXBean) and of the whole process (GC, JIT and RocksDB's background threads included) spent in
 * {@code pipeInput} (the driver processes each record synchronously inside it, commits after each
 * record and captures what the topology produced); reading the output topic back is not timed.
 * A time budget ({@code --max-seconds}, {@code --warmup-max-seconds}) stops a run after the chunk of
 * 10,000 events that goes over it, without the flush ({@code "complete": false}). Prints one JSON line.
 *
 * <pre>
 * java -cp ... windowagg.bench.KafkaWindowBench --input events.csv --kind sliding|session
 *      --store memory|rocksdb [--size-ms 10000] [--gap-ms 30000] [--grace-ms 2000]
 *      [--warmup-events N] [--warmup-max-seconds S] [--max-seconds S] [--state-dir DIR] [--changelog] [--caching] [--progress] [--print-windows]
 * </pre>
 */
public final class KafkaWindowBench {

    static final String INPUT = "events";
    static final String OUTPUT = "windows";
    static final String STORE = "agg";
    static final String FLUSH_KEY = "-1";
    static final long FLUSH_AFTER_MS = 86_400_000L; // one day after the last event: every window closes
    static final int CHUNK = 10_000;                 // events piped between two reads of the output topic

    // ---------------------------------------------------------------------------------- the aggregate

    /** count, sum, max of the value as three doubles (24 bytes). */
    static final class AggSerde implements Serde<double[]> {
        @Override
        public Serializer<double[]> serializer() {
            return (topic, a) -> {
                if (a == null) {
                    return null;
                }
                return ByteBuffer.allocate(24).putDouble(a[0]).putDouble(a[1]).putDouble(a[2]).array();
            };
        }

        @Override
        public Deserializer<double[]> deserializer() {
            return (topic, bytes) -> {
                if (bytes == null) {
                    return null;
                }
                final ByteBuffer b = ByteBuffer.wrap(bytes);
                return new double[] {b.getDouble(), b.getDouble(), b.getDouble()};
            };
        }
    }

    static final Serde<double[]> AGG = new AggSerde();
    static final Initializer<double[]> INIT = () -> new double[] {0.0, 0.0, Double.NEGATIVE_INFINITY};
    static final Aggregator<String, Double, double[]> ADD =
        (key, v, a) -> new double[] {a[0] + 1, a[1] + v, Math.max(a[2], v)};
    static final Merger<String, double[]> MERGE =
        (key, a, b) -> new double[] {a[0] + b[0], a[1] + b[1], Math.max(a[2], b[2])};

    // ------------------------------------------------------------------------------------ the topology

    /** The store's serdes, and its changelog and record cache as the run asks: the same for either kind of store. */
    static <S extends StateStore> Materialized<String, double[], S> configured(Materialized<String, double[], S> m, final Args a) {
        m = m.withKeySerde(Serdes.String()).withValueSerde(AGG);
        if (!a.changelog) {
            m = m.withLoggingDisabled();
        }
        if (!a.caching) {
            m = m.withCachingDisabled();
        }
        return m;
    }

    static Topology topology(final Args a) {
        final StreamsBuilder builder = new StreamsBuilder();
        final KGroupedStream<String, Double> grouped = builder
            .stream(INPUT, Consumed.with(Serdes.String(), Serdes.Double()))
            .groupByKey(Grouped.with(Serdes.String(), Serdes.Double()));
        final Suppressed.StrictBufferConfig buffer = a.changelog
            ? Suppressed.BufferConfig.unbounded()
            : Suppressed.BufferConfig.unbounded().withLoggingDisabled();
        final Suppressed<Windowed<?>> suppressed = Suppressed.untilWindowCloses(buffer);
        final KTable<Windowed<String>, double[]> table;
        final Serde<Windowed<String>> windowedSerde;
        if (a.kind.equals("sliding")) {
            Materialized<String, double[], WindowStore<Bytes, byte[]>> m = a.store.equals("memory")
                // the retention the DSL gives its default store for sliding windows: 2 * size + grace
                ? Materialized.as(Stores.inMemoryWindowStore(STORE, Duration.ofMillis(2 * a.sizeMs + a.graceMs),
                                                            Duration.ofMillis(a.sizeMs), false))
                : Materialized.as(STORE);   // the default persistent (RocksDB) window store
            table = grouped
                .windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(a.sizeMs), Duration.ofMillis(a.graceMs)))
                .aggregate(INIT, ADD, configured(m, a));
            windowedSerde = WindowedSerdes.timeWindowedSerdeFrom(String.class, a.sizeMs);
        } else {
            Materialized<String, double[], SessionStore<Bytes, byte[]>> m = a.store.equals("memory")
                // the retention the DSL gives its default session store: gap + grace
                ? Materialized.as(Stores.inMemorySessionStore(STORE, Duration.ofMillis(a.gapMs + a.graceMs)))
                : Materialized.as(STORE);   // the default persistent (RocksDB) session store
            table = grouped
                .windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofMillis(a.gapMs), Duration.ofMillis(a.graceMs)))
                .aggregate(INIT, ADD, MERGE, configured(m, a));
            windowedSerde = WindowedSerdes.sessionWindowedSerdeFrom(String.class);
        }
        table.suppress(suppressed).toStream().to(OUTPUT, Produced.with(windowedSerde, AGG));
        return builder.build();
    }

    // ------------------------------------------------------------------------------------------ a run

    static final class Events {
        final String[] keys;
        final long[] times;
        final double[] values;
        final long maxTime;

        Events(final String[] keys, final long[] times, final double[] values) {
            this.keys = keys;
            this.times = times;
            this.values = values;
            long m = Long.MIN_VALUE;
            for (final long t : times) {
                m = Math.max(m, t);
            }
            this.maxTime = m;
        }

        static Events read(final Path csv) throws IOException {
            final List<String> ks = new ArrayList<>();
            final List<Long> ts = new ArrayList<>();
            final List<Double> vs = new ArrayList<>();
            final Map<String, String> interned = new HashMap<>();
            try (BufferedReader r = Files.newBufferedReader(csv, StandardCharsets.UTF_8)) {
                String line;
                boolean first = true;
                while ((line = r.readLine()) != null) {
                    if (line.isEmpty()) {
                        continue;
                    }
                    final String[] f = line.split(",", -1);
                    if (first) {
                        first = false;
                        if (!f[1].isEmpty() && !Character.isDigit(f[1].charAt(0)) && f[1].charAt(0) != '-') {
                            continue; // header
                        }
                    }
                    ks.add(interned.computeIfAbsent(f[0], k -> k));
                    ts.add(Long.parseLong(f[1]));
                    vs.add(Double.parseDouble(f[2]));
                }
            }
            final int n = ks.size();
            final long[] t = new long[n];
            final double[] v = new double[n];
            for (int i = 0; i < n; i++) {
                t[i] = ts.get(i);
                v[i] = vs.get(i);
            }
            return new Events(ks.toArray(new String[0]), t, v);
        }
    }

    static final class Result {
        long events;
        long outputRecords;
        double sumOfCounts;
        long nanos;
        long threadCpuNanos;
        long processCpuNanos;
        long otherRecords;   // changelog records the driver captured (with --changelog)
        long flushRecords;   // windows of the flush key that closed (only with a zero grace)
        boolean complete;    // every event and the flush event were piped
        final List<double[]> chunks = new ArrayList<>();   // (events piped so far, events/s of the chunk)
    }

    /**
     * Pipes events [0, n) (then the flush event) through a fresh driver. With maxSeconds > 0 the run stops
     * after the first chunk that brings the piping time over it, without the flush (complete = false).
     */
    static Result run(final Args a, final Events ev, final int n, final Path stateDir, final double maxSeconds)
        throws IOException {
        deleteRecursively(stateDir);
        Files.createDirectories(stateDir);
        final Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, "windowagg-kafka-compare");
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "dummy:1234"); // the test driver connects to nothing
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
        final ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        final com.sun.management.OperatingSystemMXBean os =
            (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        final Result res = new Result();
        try (TopologyTestDriver driver = new TopologyTestDriver(topology(a), p)) {
            final TestInputTopic<String, Double> in =
                driver.createInputTopic(INPUT, new StringSerializer(), new DoubleSerializer());
            final TestOutputTopic<byte[], byte[]> out =
                driver.createOutputTopic(OUTPUT, new ByteArrayDeserializer(), new ByteArrayDeserializer());
            final Deserializer<double[]> agg = AGG.deserializer();
            final Deserializer<Windowed<String>> windowed = a.kind.equals("sliding")
                ? WindowedSerdes.timeWindowedSerdeFrom(String.class, a.sizeMs).deserializer()
                : WindowedSerdes.sessionWindowedSerdeFrom(String.class).deserializer();
            for (int from = 0; from <= n; from += CHUNK) {
                final int to = Math.min(n, from + CHUNK);
                final boolean last = to == n;
                final long c0 = threads.getCurrentThreadCpuTime();
                final long p0 = os.getProcessCpuTime();
                final long t0 = System.nanoTime();
                for (int i = from; i < to; i++) {
                    in.pipeInput(ev.keys[i], ev.values[i], ev.times[i]);
                }
                if (last) {
                    // moves stream time a day past the last event: every window of the real keys closes
                    in.pipeInput(FLUSH_KEY, 0.0, ev.maxTime + FLUSH_AFTER_MS);
                }
                final long dt = System.nanoTime() - t0;
                res.nanos += dt;
                res.threadCpuNanos += threads.getCurrentThreadCpuTime() - c0;
                res.processCpuNanos += os.getProcessCpuTime() - p0;
                res.events = to;
                if (to > from) {
                    res.chunks.add(new double[] {to, (to - from) / (dt / 1e9)});
                }
                if (a.progress) {
                    System.err.printf(Locale.ROOT, "%s %s: %,d events in %.1f s (last %,d at %,.0f events/s)%n",
                        a.kind, a.store, to, res.nanos / 1e9, to - from, (to - from) / (dt / 1e9));
                }
                // untimed: read back what the topology emitted (the driver keeps it in memory until read)
                for (final var kv : out.readKeyValuesToList()) {
                    final Windowed<String> w = windowed.deserialize(OUTPUT, kv.key);
                    if (w.key().equals(FLUSH_KEY)) {
                        res.flushRecords++;   // not a window of the events (none with a grace > 0)
                        continue;
                    }
                    res.outputRecords++;
                    res.sumOfCounts += agg.deserialize(OUTPUT, kv.value)[0];
                    if (a.printWindows) {
                        System.err.println(w.key() + " [" + w.window().start() + "," + w.window().end() + "] "
                            + java.util.Arrays.toString(agg.deserialize(OUTPUT, kv.value)));
                    }
                }
                for (final String topic : driver.producedTopicNames()) {
                    if (!topic.equals(OUTPUT)) {
                        res.otherRecords += driver.createOutputTopic(topic, new ByteArrayDeserializer(),
                            new ByteArrayDeserializer()).readRecordsToList().size();
                    }
                }
                if (last) {
                    res.complete = true;
                    break;
                }
                if (maxSeconds > 0 && res.nanos / 1e9 > maxSeconds) {
                    break;   // over the time budget: stopped early, no flush
                }
            }
        }
        deleteRecursively(stateDir);
        return res;
    }

    // ----------------------------------------------------------------------------------------- main

    static final class Args {
        Path input;
        String kind = "sliding";
        String store = "memory";
        long sizeMs = 10_000;
        long gapMs = 30_000;
        long graceMs = 2_000;
        int warmupEvents = 0;
        double maxSeconds = 0;         // budget of the timed run's piping time (0: none)
        double warmupMaxSeconds = 0;   // budget of the warm-up run's piping time (0: none)
        Path stateDir;
        boolean changelog = false;
        boolean printWindows = false;
        boolean caching = false;
        boolean progress = false;

        static Args parse(final String[] argv) {
            final Args a = new Args();
            for (int i = 0; i < argv.length; i++) {
                final String k = argv[i];
                if (k.equals("--changelog")) {
                    a.changelog = true;
                    continue;
                }
                if (k.equals("--progress")) {   // one line per 10,000 events on stderr
                    a.progress = true;
                    continue;
                }
                if (k.equals("--caching")) {
                    a.caching = true;
                    continue;
                }
                if (k.equals("--print-windows")) {   // every emitted window on stderr (for small checks)
                    a.printWindows = true;
                    continue;
                }
                if (i + 1 >= argv.length) {
                    throw new IllegalArgumentException("missing value for " + k);
                }
                final String v = argv[++i];
                switch (k) {
                    case "--input": a.input = Paths.get(v); break;
                    case "--kind": a.kind = v; break;
                    case "--store": a.store = v; break;
                    case "--size-ms": a.sizeMs = Long.parseLong(v); break;
                    case "--gap-ms": a.gapMs = Long.parseLong(v); break;
                    case "--grace-ms": a.graceMs = Long.parseLong(v); break;
                    case "--warmup-events": a.warmupEvents = Integer.parseInt(v); break;
                    case "--max-seconds": a.maxSeconds = Double.parseDouble(v); break;
                    case "--warmup-max-seconds": a.warmupMaxSeconds = Double.parseDouble(v); break;
                    case "--state-dir": a.stateDir = Paths.get(v); break;
                    default: throw new IllegalArgumentException("unknown argument " + k);
                }
            }
            if (a.input == null) {
                throw new IllegalArgumentException("--input CSV is required");
            }
            if (!a.kind.equals("sliding") && !a.kind.equals("session")) {
                throw new IllegalArgumentException("--kind must be sliding or session");
            }
            if (!a.store.equals("memory") && !a.store.equals("rocksdb")) {
                throw new IllegalArgumentException("--store must be memory or rocksdb");
            }
            if (a.stateDir == null) {
                a.stateDir = Paths.get(System.getProperty("java.io.tmpdir"),
                    "windowagg-kafka-state-" + ProcessHandle.current().pid());
            }
            return a;
        }
    }

    public static void main(final String[] argv) throws Exception {
        final Args a = Args.parse(argv);
        final long r0 = System.nanoTime();
        final Events ev = Events.read(a.input);
        final double readS = (System.nanoTime() - r0) / 1e9;
        final int n = ev.keys.length;

        Result warm = null;
        final int w = Math.min(a.warmupEvents, n);
        if (w > 0) {
            warm = run(a, ev, w, a.stateDir.resolve("warmup"), a.warmupMaxSeconds);
        }
        System.gc();
        final Result r = run(a, ev, n, a.stateDir.resolve("timed"), a.maxSeconds);
        deleteRecursively(a.stateDir);

        final double s = r.nanos / 1e9;
        final StringBuilder j = new StringBuilder("{");
        field(j, "kind", a.kind);
        field(j, "store", a.store);
        field(j, "complete", r.complete);
        field(j, "events", r.events);
        field(j, "events_total", (long) n);
        field(j, "event_time_span_s", r.events > 0 ? (maxTime(ev, (int) r.events) - ev.times[0]) / 1000.0 : 0.0);
        field(j, "output_records", r.outputRecords);
        field(j, "sum_of_counts", (long) r.sumOfCounts);
        field(j, "seconds", s);
        field(j, "events_per_s", r.events / s);
        field(j, "cpu_seconds", r.threadCpuNanos / 1e9);
        field(j, "process_cpu_seconds", r.processCpuNanos / 1e9);
        field(j, "flush_key_windows", r.flushRecords);
        field(j, "changelog", a.changelog);
        field(j, "caching", a.caching);
        field(j, "changelog_records", r.otherRecords);
        field(j, "last_chunk_events_per_s", r.chunks.isEmpty() ? 0.0 : r.chunks.get(r.chunks.size() - 1)[1]);
        field(j, "max_seconds", a.maxSeconds);
        field(j, "warmup_events", warm == null ? 0L : warm.events);
        field(j, "warmup_complete", warm != null && warm.complete);
        field(j, "warmup_seconds", warm == null ? 0.0 : warm.nanos / 1e9);
        field(j, "warmup_output_records", warm == null ? 0 : warm.outputRecords);
        field(j, "size_ms", a.sizeMs);
        field(j, "gap_ms", a.gapMs);
        field(j, "grace_ms", a.graceMs);
        field(j, "read_csv_seconds", readS);
        field(j, "kafka_streams", AppInfoParser.getVersion());
        field(j, "java", System.getProperty("java.vm.name") + " " + System.getProperty("java.version"));
        field(j, "max_heap_gib", Runtime.getRuntime().maxMemory() / (double) (1L << 30));
        final StringBuilder chunks = new StringBuilder("[");
        for (final double[] c : r.chunks) {
            chunks.append(String.format(Locale.ROOT, "[%d,%.1f],", (long) c[0], c[1]));
        }
        if (chunks.length() > 1) {
            chunks.setLength(chunks.length() - 1);
        }
        j.append("\"chunks\":").append(chunks.append("]")).append(',');
        j.setLength(j.length() - 1);
        System.out.println(j.append("}"));
    }

    static long maxTime(final Events ev, final int n) {
        long m = Long.MIN_VALUE;
        for (int i = 0; i < n; i++) {
            m = Math.max(m, ev.times[i]);
        }
        return m;
    }

    static void field(final StringBuilder j, final String k, final Object v) {
        j.append('"').append(k).append("\":");
        if (v instanceof String) {
            j.append('"').append(((String) v).replace("\\", "\\\\").replace("\"", "\\\"")).append('"');
        } else if (v instanceof Double && (((Double) v).isNaN() || ((Double) v).isInfinite())) {
            j.append("null");
        } else if (v instanceof Double) {
            j.append(String.format(Locale.ROOT, "%.6f", (Double) v));
        } else {
            j.append(v);
        }
        j.append(',');
    }

    static void deleteRecursively(final Path p) throws IOException {
        if (!Files.exists(p)) {
            return;
        }
        try (Stream<Path> walk = Files.walk(p)) {
            for (final Path q : (Iterable<Path>) walk.sorted(Comparator.reverseOrder())::iterator) {
                Files.deleteIfExists(q);
            }
        }
    }

    private KafkaWindowBench() {
    }
}
