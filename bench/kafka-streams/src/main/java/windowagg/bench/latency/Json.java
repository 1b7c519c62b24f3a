package windowagg.bench.latency;

/** The few JSON helpers the benchmark needs: fields of a flat object, read without a JSON library. */
final class Json {
    private Json() {}

    /** The integral value of `"name": 123` in `json`, or `missing` when there is no such field. */
    static long longField(String json, String name, long missing) {
        String key = "\"" + name + "\"";
        int at = json.indexOf(key);
        if (at < 0) {
            return missing;
        }
        int i = json.indexOf(':', at + key.length());
        if (i < 0) {
            return missing;
        }
        i++;
        int n = json.length();
        while (i < n && (json.charAt(i) == ' ' || json.charAt(i) == '"')) {
            i++;
        }
        boolean negative = i < n && json.charAt(i) == '-';
        if (negative) {
            i++;
        }
        long v = 0;
        int digits = 0;
        while (i < n) {
            char c = json.charAt(i);
            if (c < '0' || c > '9') {
                break;
            }
            v = v * 10 + (c - '0');
            digits++;
            i++;
        }
        if (digits == 0) {
            return missing;
        }
        return negative ? -v : v;
    }

    /** A string as a JSON string literal (the benchmark's strings need no escapes beyond quotes and backslashes). */
    static String quote(String s) {
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }
}
