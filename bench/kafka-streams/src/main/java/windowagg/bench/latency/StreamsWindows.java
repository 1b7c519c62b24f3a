package windowagg.bench.latency;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.Serializer;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.SlidingWindows;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.processor.TimestampExtractor;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.WindowStore;

/**
 * The Kafka Streams side of bench/latency.py: a real {@link KafkaStreams} instance against the benchmark's
 * broker (not the test driver), with the same windowed aggregation as the Spark queries.
 *
 * <pre>
 * --bootstrap HOST:PORT --input TOPIC --output TOPIC --app-id ID --state-dir DIR
 * --kind sliding|tumbling [--size-ms 10000] [--grace-ms 1000] [--store rocksdb|memory]
 * [--commit-ms 100] [--linger-ms 0] [--threads 1]
 * </pre>
 *
 * <p>Input: the load's JSON values keyed by {@code k}; event time from their {@code ts} field. Per key,
 * {@code SlidingWindows.ofTimeDifferenceAndGrace(size, grace)} (KIP-450) or {@code TimeWindows.ofSizeAndGrace(size,
 * grace)}, aggregated to the count and the largest {@code sent}; every update of a window goes to the output
 * topic at once (record cache off: {@code statestore.cache.max.bytes=0}) as
 * {@code {"k": .., "start": .., "end": .., "n": .., "sent": ..}}. The state store is RocksDB (Kafka Streams'
 * default) with its changelog topic, or in memory. Prints {@code RUNNING} on standard output once the instance
 * runs, and stops on SIGTERM.
 */
public final class StreamsWindows {

    /** Count and largest `sent` of a window, 16 bytes. */
    record Agg(long n, long sent) {}

    static final class AggSerde implements Serde<Agg> {
        @Override
        public Serializer<Agg> serializer() {
            return (topic, a) -> a == null ? null : ByteBuffer.allocate(16).putLong(a.n()).putLong(a.sent()).array();
        }

        @Override
        public Deserializer<Agg> deserializer() {
            return (topic, b) -> {
                if (b == null) {
                    return null;
                }
                ByteBuffer bb = ByteBuffer.wrap(b);
                return new Agg(bb.getLong(), bb.getLong());
            };
        }
    }

    /** Event time: the value's `ts` field (milliseconds). */
    public static final class TsExtractor implements TimestampExtractor {
        @Override
        public long extract(ConsumerRecord<Object, Object> record, long partitionTime) {
            Object v = record.value();
            long ts = v == null ? -1 : Json.longField(v.toString(), "ts", -1);
            return ts >= 0 ? ts : record.timestamp();
        }
    }

    public static void main(String[] argv) throws Exception {
        Args a = new Args(argv);
        String kind = a.get("kind");
        Duration size = Duration.ofMillis(a.getLong("size-ms", 10_000));
        Duration grace = Duration.ofMillis(a.getLong("grace-ms", 1_000));
        String store = a.get("store", "rocksdb");

        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, a.get("app-id"));
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, a.get("bootstrap"));
        p.put(StreamsConfig.STATE_DIR_CONFIG, a.get("state-dir"));
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, a.get("threads", "1"));
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, "0");
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, a.get("commit-ms", "100"));
        p.put(StreamsConfig.DEFAULT_TIMESTAMP_EXTRACTOR_CLASS_CONFIG, TsExtractor.class.getName());
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG), "50");
        // Kafka Streams' own producer default is linger.ms=100: every update should go out at once
        p.put(StreamsConfig.producerPrefix(ProducerConfig.LINGER_MS_CONFIG), a.get("linger-ms", "0"));
        p.put(StreamsConfig.producerPrefix(ProducerConfig.ACKS_CONFIG), "1");
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, "1");

        StreamsBuilder builder = new StreamsBuilder();
        KGroupedStream<String, String> grouped = builder
                .stream(a.get("input"), Consumed.with(Serdes.String(), Serdes.String()))
                .groupByKey(Grouped.with(Serdes.String(), Serdes.String()));
        AggSerde aggSerde = new AggSerde();
        Materialized<String, Agg, WindowStore<Bytes, byte[]>> materialized;
        long retentionMs = size.toMillis() * 2 + grace.toMillis() + 1;
        if (store.equals("memory")) {
            materialized = Materialized.<String, Agg>as(Stores.inMemoryWindowStore(
                    "windows", Duration.ofMillis(retentionMs), size.plusMillis("sliding".equals(kind) ? 1 : 0), false));
        } else if (store.equals("rocksdb")) {
            materialized = Materialized.as("windows");
        } else {
            throw new IllegalArgumentException("--store rocksdb or memory, not " + store);
        }
        materialized = materialized.withKeySerde(Serdes.String()).withValueSerde(aggSerde).withCachingDisabled();
        KTable<Windowed<String>, Agg> table;
        if (kind.equals("sliding")) {
            table = grouped.windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(size, grace))
                    .aggregate(() -> new Agg(0, Long.MIN_VALUE), StreamsWindows::add, materialized);
        } else if (kind.equals("tumbling")) {
            table = grouped.windowedBy(TimeWindows.ofSizeAndGrace(size, grace))
                    .aggregate(() -> new Agg(0, Long.MIN_VALUE), StreamsWindows::add, materialized);
        } else {
            throw new IllegalArgumentException("--kind sliding or tumbling, not " + kind);
        }
        table.toStream()
                .map((w, agg) -> KeyValue.pair(w.key(), agg == null ? null : "{\"k\":" + Json.quote(w.key())
                        + ",\"start\":" + w.window().start() + ",\"end\":" + w.window().end() + ",\"n\":" + agg.n()
                        + ",\"sent\":" + agg.sent() + "}"))
                .to(a.get("output"), Produced.with(Serdes.String(), Serdes.String()));

        KafkaStreams streams = new KafkaStreams(builder.build(), p);
        CountDownLatch stopped = new CountDownLatch(1);
        streams.setStateListener((now, before) -> {
            System.err.println("state " + before + " -> " + now);
            if (now == KafkaStreams.State.RUNNING) {
                System.out.println("RUNNING");
                System.out.flush();
            }
            if (now == KafkaStreams.State.ERROR || now == KafkaStreams.State.NOT_RUNNING) {
                stopped.countDown();
            }
        });
        streams.setUncaughtExceptionHandler(e -> {
            System.err.println("uncaught: " + e);
            return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse
                    .SHUTDOWN_CLIENT;
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close(Duration.ofSeconds(20));
            stopped.countDown();
        }));
        streams.start();
        stopped.await();
        streams.close(Duration.ofSeconds(20));
    }

    static Agg add(String key, String value, Agg agg) {
        long sent = Json.longField(value, "sent", Long.MIN_VALUE);
        return new Agg(agg.n() + 1, Math.max(agg.sent(), sent));
    }
}
