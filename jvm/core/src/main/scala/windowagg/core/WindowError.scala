package windowagg.core

/** A problem with a window definition or its input, stated so the user can fix it. */
final case class WindowError(message: String) extends IllegalArgumentException(message)
