package windowagg.core

/** The partial aggregate of all records of one key that share one time (in ticks). */
final case class Timed[P](time: Long, partial: P)
