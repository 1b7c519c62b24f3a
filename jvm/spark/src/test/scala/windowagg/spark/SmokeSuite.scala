package windowagg.spark

import org.apache.spark.sql.functions._
import org.scalatest.funsuite.AnyFunSuite

import windowagg.SlidingWindows
import windowagg.functions.window

class SmokeSuite extends AnyFunSuite with SparkSessionFixture {
  test("semantics example") {
    import spark.implicits._
    val df = Seq(("a", 10L, 1), ("a", 14L, 2), ("a", 15L, 3)).toDF("k", "t", "v")
    val out = df.groupBy(col("k"), window(col("t"), SlidingWindows.of(10L))).agg(sum("v").as("s"), count(lit(1)).as("n"), collect_list("v").as("l"))
    out.explain(true)
    out.show(false)
    spark.sql("select 1").collect()
    df.createOrReplaceTempView("ev")
    spark.sql("SELECT k, window.start, window.end, sum(v) AS s FROM ev GROUP BY k, sliding_window(t, 10) ORDER BY 2").show()
    spark.sql("SELECT * FROM sliding_window_agg(TABLE(ev) PARTITION BY k ORDER BY (t), 10, 'sum(v) AS total, count(1) AS n')").show()
  }
}
