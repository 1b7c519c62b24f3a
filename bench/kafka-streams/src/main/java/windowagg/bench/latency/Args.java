package windowagg.bench.latency;

import java.util.HashMap;
import java.util.Map;

/** `--name value` command-line options (a name without a value, or followed by another option, is "true"). */
final class Args {
    private final Map<String, String> values = new HashMap<>();

    Args(String[] argv) {
        for (int i = 0; i < argv.length; i++) {
            String a = argv[i];
            if (!a.startsWith("--")) {
                throw new IllegalArgumentException("unexpected argument " + a);
            }
            boolean hasValue = i + 1 < argv.length && !argv[i + 1].startsWith("--");
            values.put(a.substring(2), hasValue ? argv[++i] : "true");
        }
    }

    String get(String name) {
        String v = values.get(name);
        if (v == null) {
            throw new IllegalArgumentException("missing --" + name);
        }
        return v;
    }

    String get(String name, String dflt) {
        return values.getOrDefault(name, dflt);
    }

    long getLong(String name, long dflt) {
        String v = values.get(name);
        return v == null ? dflt : Long.parseLong(v);
    }

    double getDouble(String name, double dflt) {
        String v = values.get(name);
        return v == null ? dflt : Double.parseDouble(v);
    }
}
