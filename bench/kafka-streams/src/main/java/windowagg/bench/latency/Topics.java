package windowagg.bench.latency;

import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;

/**
 * Creates topics on the benchmark's broker and waits until they exist, or deletes a finished run's topics:
 * <pre>
 * --bootstrap HOST:PORT --create a,b [--partitions 1]
 * --bootstrap HOST:PORT --delete-prefix P     every topic whose name starts with P (Kafka Streams' internal ones too)
 * </pre>
 * Prints one JSON line.
 */
public final class Topics {
    public static void main(String[] argv) throws Exception {
        Args a = new Args(argv);
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, a.get("bootstrap"));
        try (Admin admin = Admin.create(p)) {
            String prefix = a.get("delete-prefix", null);
            if (prefix != null) {
                Set<String> names = admin.listTopics().names().get(60, TimeUnit.SECONDS);
                List<String> gone = new ArrayList<>();
                for (String n : names) {
                    if (n.startsWith(prefix)) {
                        gone.add(n);
                    }
                }
                if (!gone.isEmpty()) {
                    admin.deleteTopics(gone).all().get(60, TimeUnit.SECONDS);
                }
                System.out.println("{\"deleted\": " + gone.size() + "}");
                return;
            }
            int partitions = (int) a.getLong("partitions", 1);
            List<NewTopic> topics = new ArrayList<>();
            List<String> names = new ArrayList<>();
            for (String name : a.get("create").split(",")) {
                topics.add(new NewTopic(name.trim(), partitions, (short) 1));
                names.add(name.trim());
            }
            admin.createTopics(topics).all().get(60, TimeUnit.SECONDS);
            // every partition's metadata before the programs that use them start
            admin.describeTopics(names).allTopicNames().get(60, TimeUnit.SECONDS);
            System.out.println("{\"created\": " + topics.size() + ", \"partitions\": " + partitions + "}");
        }
    }
}
