package org.apache.spark.sql.windowagg

import scala.collection.immutable.ArraySeq
import scala.jdk.CollectionConverters._
import scala.util.Try

import org.apache.spark.SparkContext
import org.apache.spark.api.python.{PythonBroadcast, PythonEvalType, PythonFunction}
import org.apache.spark.broadcast.Broadcast
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.{classic, Column, DataFrame, Dataset, SparkSession}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.plans.logical.{BaseEvalPython, LogicalPlan}
import org.apache.spark.sql.catalyst.expressions.{Alias, Expression, NamedExpression, PythonUDAF, PythonUDF, SortOrder}
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression
import org.apache.spark.sql.catalyst.optimizer.NormalizeFloatingNumbers
import org.apache.spark.sql.catalyst.plans.physical.{ClusteredDistribution, Distribution, HashPartitioning, Partitioning}
import org.apache.spark.sql.classic.ExpressionUtils
import org.apache.spark.sql.execution.{SortExec, SparkPlan, SQLExecution}
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanHelper
import org.apache.spark.sql.execution.aggregate.AggUtils
import org.apache.spark.sql.execution.datasources.v2.StreamingDataSourceV2ScanRelation
import org.apache.spark.sql.execution.exchange.ShuffleExchangeExec
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.{DataType, StructType}
import org.apache.spark.util.CollectionAccumulator

/**
 * The one place that uses Spark APIs which are package-private and have changed between releases
 * (Column <-> Catalyst expression, Python eval types, walking adaptive plans); it lives in Spark's
 * package for that reason. Catalyst's expression and plan classes themselves are the extension
 * points SparkSessionExtensions offers and are used directly by windowagg.spark.
 *
 * It is also where the Spark 4 lines windowagg supports (4.1, 4.2, 4.3) differ in binary form: the
 * jar is compiled against 4.3 and runs on all three, so whatever 4.3 declares differently is
 * reached here without linking to 4.3's signature. Compiling against each line
 * (build/sbt -Dspark.version=...) and comparing the class files shows that only these differ.
 */
object SparkInternals extends AdaptiveSparkPlanHelper {

  def expression(column: Column): Expression = ExpressionUtils.expression(column)

  def column(expression: Expression, name: String): Column = ExpressionUtils.column(Alias(expression, name)())

  def column(expression: Expression): Column = ExpressionUtils.column(expression)

  /** A DataFrame over an analyzed plan, in `session` (used to build streaming plans with the Dataset API). */
  /** A DataFrame of rows in Spark's internal form, which `schema` describes. */
  def internalRowsToDataFrame(session: SparkSession, rows: RDD[InternalRow], schema: StructType): DataFrame =
    session.asInstanceOf[classic.SparkSession].internalCreateDataFrame(rows, schema)

  def dataFrame(session: SparkSession, plan: LogicalPlan): DataFrame =
    classic.Dataset.ofRows(session.asInstanceOf[classic.SparkSession], plan)

  /**
   * For a grouped-aggregate UDF of `evalType` that windowagg can call on slices of a key's rows, the
   * cogrouped-map evaluation it runs in and whether it takes Arrow (else pandas); None for the
   * others (the iterator forms).
   */
  def cogroupedEvaluation(evalType: Int): Option[(Int, Boolean)] =
    if (evalType == PythonEvalType.SQL_GROUPED_AGG_PANDAS_UDF) Some((PythonEvalType.SQL_COGROUPED_MAP_PANDAS_UDF, false))
    else if (evalType == PythonEvalType.SQL_GROUPED_AGG_ARROW_UDF) Some((PythonEvalType.SQL_COGROUPED_MAP_ARROW_UDF, true))
    else None

  /** The evaluation of a scalar Arrow UDF (pyarrow Arrays in, one out), in Arrow batches of rows. */
  val ScalarArrowEvalType: Int = PythonEvalType.SQL_SCALAR_ARROW_UDF

  /** The pickled command of a Python UDF: its function and return type, as PySpark pickled them. */
  def pythonCommand(udf: PythonUDAF): Array[Byte] = udf.func.command.toArray

  /**
   * A Python UDF running the pickled command `pickled` in the Python environment of `udfs` (their interpreter, includes
   * and variables, and every broadcast their commands may read), of evaluation `evalType`.
   */
  def pythonUDF(name: String, udfs: Seq[PythonUDAF], pickled: Array[Byte], dataType: DataType,
      children: Seq[Expression], evalType: Int): PythonUDF = {
    val like = udfs.head.func
    val function = CommandInEnvironment(ArraySeq.unsafeWrapArray(pickled), like.envVars, like.pythonIncludes,
      like.pythonExec, like.pythonVer, udfs.flatMap(_.func.broadcastVars.asScala).distinct.asJava, like.accumulator)
    PythonUDF(name, function, dataType, children, evalType, udfDeterministic = true)
  }

  /** Whether `plan`, optimized, runs a Python function (a Python or pandas/Arrow UDF, in Spark's Python workers). */
  def evaluatesPython(plan: LogicalPlan): Boolean = plan.exists(_.isInstanceOf[BaseEvalPython])

  /** Every operator of `plan` matching `pick`, looking into adaptive query stages and subqueries. */
  def collectOperators[T](plan: SparkPlan)(pick: PartialFunction[SparkPlan, T]): Seq[T] =
    collectWithSubqueries(plan)(pick)

  def executedPlan(df: Dataset[_]): SparkPlan = df.queryExecution.executedPlan

  /** The rows of a small DataFrame as Spark holds them (a timestamp as its microseconds), on the driver. */
  def collectInternal(df: DataFrame): Array[InternalRow] = {
    val execution = df.queryExecution
    SQLExecution.withNewExecutionId(execution, Some("windowagg: read a windows table"))(execution.executedPlan.executeCollect())
  }

  /**
   * The event-time watermark (ms) of the streaming micro-batch whose execution calls this (on the
   * driver), or None outside one. Its execution (IncrementalExecution, in another package on each
   * Spark line) is found by the execution id and read by its methods' names.
   */
  def runningBatchWatermarkMs(context: SparkContext): Option[Long] =
    Option(context.getLocalProperty(SQLExecution.EXECUTION_ID_KEY))
      .flatMap(id => Option(SQLExecution.getQueryExecution(id.toLong)))
      .flatMap { execution =>
        Try {
          val metadata = execution.getClass.getMethod("offsetSeqMetadata").invoke(execution)
          metadata.getClass.getMethod("batchWatermarkMs").invoke(metadata).asInstanceOf[Long]
        }.toOption
      }

  /**
   * Whether `plan`, a micro-batch's plan, reads its stream in real-time mode
   * (`trigger(realTime=...)`): the stream's relation then carries the mode's batch duration.
   */
  def readsInRealTime(plan: LogicalPlan): Boolean = plan.exists {
    case scan: StreamingDataSourceV2ScanRelation => scan.relation.realTimeModeDuration.isDefined
    case _ => false
  }

  /**
   * Spark's partial aggregation of `child` per `grouping` (the Partial mode of a two-step
   * aggregation): hash-based, object-hash or sort-based as Spark's own planner picks for the
   * aggregates' buffers. Its output is the grouping columns, then each aggregate's buffer.
   */
  def partialAggregate(grouping: Seq[NamedExpression], aggregates: Seq[AggregateExpression], child: SparkPlan): SparkPlan = {
    val results = grouping.map(_.toAttribute) ++ aggregates.map(_.resultAttribute)
    AggUtils.planAggregateWithoutDistinct(grouping, aggregates, results, child) match {
      case Seq(finalAggregate) if finalAggregate.children.length == 1 => finalAggregate.children.head
      case other => throw new IllegalStateException(s"Spark planned an aggregation as $other")
    }
  }

  /**
   * Rows clustered by `keys`, every other parameter at its default. ClusteredDistribution is a case
   * class whose parameter list grew in Spark 4.3 (allowNullKeySpreading), so its companion's apply
   * and defaults are found by reflection, once, rather than linked to one line's signature.
   */
  def clusteredDistribution(keys: Seq[Expression]): Distribution = clusteredBy(keys)

  private lazy val clusteredBy: Seq[Expression] => Distribution = {
    val apply = applyWithDefaults(ClusteredDistribution, classOf[Seq[_]], leading = 1)
    keys => apply(Seq(keys)).asInstanceOf[Distribution]
  }

  /**
   * The `apply` of a case class's `companion` whose first parameter is a `first`, taking its first
   * `leading` arguments with every later parameter at its default: found by reflection, once, rather
   * than linked to one Spark line's signature.
   */
  private def applyWithDefaults(companion: AnyRef, first: Class[_], leading: Int): Seq[AnyRef] => AnyRef = {
    val methods = companion.getClass.getMethods.toSeq
    val apply = methods
      .find(m => m.getName == "apply" && m.getParameterCount >= leading && m.getParameterTypes.head == first)
      .getOrElse(throw new IllegalStateException(
        s"this Spark's $companion has no apply(${first.getSimpleName}, ...): ${methods.mkString(", ")}"))
    val defaults = (leading + 1 to apply.getParameterCount).map(i => companion.getClass.getMethod(s"apply$$default$$$i").invoke(companion))
    arguments => apply.invoke(companion, (arguments ++ defaults): _*)
  }

  /**
   * How many partitions a streaming query's state has: the number its checkpoint fixed, which Spark
   * keeps in an internal setting of the query's session (a restart under another
   * spark.sql.shuffle.partitions keeps it), else spark.sql.shuffle.partitions.
   */
  def statePartitions(conf: SQLConf): Int =
    conf.getConf(SQLConf.STATEFUL_SHUFFLE_PARTITIONS_INTERNAL).getOrElse(conf.numShufflePartitions)

  /** `key` with floating-point values normalized (-0.0 as 0.0, one NaN), as Spark's own grouping keys are. */
  def normalizedKey(key: Expression): Expression = NormalizeFloatingNumbers.normalize(key)

  /** `child` hash-partitioned by `clustering` into `partitions` (as Spark's own shuffle would), each partition sorted by `order`. */
  def shuffledAndSorted(clustering: Seq[Expression], partitions: Int, order: Seq[SortOrder], child: SparkPlan): SparkPlan =
    SortExec(order, global = false, shuffle(HashPartitioning(clustering, partitions), child))

  // ShuffleExchangeExec's parameter list grew in Spark 4.3, as ClusteredDistribution's did
  private lazy val shuffle: (Partitioning, SparkPlan) => SparkPlan = {
    val apply = applyWithDefaults(ShuffleExchangeExec, classOf[Partitioning], leading = 2)
    (partitioning, child) => apply(Seq(partitioning, child)).asInstanceOf[SparkPlan]
  }
}

/** A Python function: a pickled command, and the environment it runs in. */
private final case class CommandInEnvironment(
    command: Seq[Byte],
    envVars: java.util.Map[String, String],
    pythonIncludes: java.util.List[String],
    pythonExec: String,
    pythonVer: String,
    broadcastVars: java.util.List[Broadcast[PythonBroadcast]],
    accumulator: CollectionAccumulator[Array[Byte]]) extends PythonFunction
