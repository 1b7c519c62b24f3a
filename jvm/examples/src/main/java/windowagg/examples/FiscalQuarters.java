package windowagg.examples;

import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.Month;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import windowagg.EnumerableWindowDefinition;
import windowagg.Timeline;
import windowagg.Window;

/**
 * Fiscal quarters of a year that starts in a given month (February by default), in the time
 * column's zone: each time belongs to exactly one quarter, [first day of its quarter, first day of
 * the next). A user-defined window kind written in Java; from Python or SQL it is named with its
 * parameters, e.g. {@code custom windowagg.examples.FiscalQuarters(firstMonth=2)}.
 */
public final class FiscalQuarters implements EnumerableWindowDefinition {
    private static final long serialVersionUID = 1L;
    private final int firstMonth;

    public FiscalQuarters(Map<String, String> parameters) {
        for (String name : parameters.keySet()) {
            if (!name.equals("firstMonth")) {
                throw new IllegalArgumentException("unknown parameter '" + name + "'; FiscalQuarters takes firstMonth");
            }
        }
        String month = parameters.getOrDefault("firstMonth", "2").trim();
        this.firstMonth = month.matches("\\d+") ? Integer.parseInt(month) : Month.valueOf(month.toUpperCase(Locale.ROOT)).getValue();
        if (firstMonth < 1 || firstMonth > 12) {
            throw new IllegalArgumentException("firstMonth must be 1 to 12 or a month name, got " + month);
        }
    }

    public FiscalQuarters(int firstMonth) {
        this(Map.of("firstMonth", Integer.toString(firstMonth)));
    }

    @Override
    public List<Window> windowsFor(long time, Timeline timeline) {
        LocalDate day = timeline.toLocal(time).toLocalDate();
        int intoYear = Math.floorMod(day.getMonthValue() - firstMonth, 12);
        LocalDate start = day.withDayOfMonth(1).minusMonths(intoYear % 3);
        LocalDateTime from = start.atStartOfDay();
        return List.of(new Window(timeline.fromLocal(from), timeline.fromLocal(from.plusMonths(3))));
    }

    /** 92 days, plus an hour for a daylight-saving change inside the quarter. */
    @Override
    public long maxSize(Timeline timeline) {
        return timeline.unit().convert(92L * 24 + 1, TimeUnit.HOURS);
    }

    @Override
    public String spec() {
        return "custom " + getClass().getName() + "(firstMonth=" + firstMonth + ")";
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof FiscalQuarters && ((FiscalQuarters) other).firstMonth == firstMonth;
    }

    @Override
    public int hashCode() {
        return firstMonth;
    }

    @Override
    public String toString() {
        return "FiscalQuarters(firstMonth=" + firstMonth + ")";
    }
}
