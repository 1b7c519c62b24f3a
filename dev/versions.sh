# Pinned versions shared by every script. Spark's Scala artifacts for this line are read from the
# pinned PySpark distribution (its jars/ folder), so the jar is compiled and tested against exactly
# the Spark a Python user runs.
WINDOWAGG_VERSION=0.4.0
PYSPARK_VERSION=4.3.0
# The older Spark lines the same jar runs on, each the newest release both on Maven Central (the
# Spark to compile against for comparison) and on PyPI (the PySpark to test with):
# dev/test-spark-version 4.1 (run by dev/test) or 4.2
SPARK_4_1_VERSION=4.1.3
SPARK_4_2_VERSION=4.2.0
PYTEST_VERSION=9.2.0
# pytest's workers (dev/test runs the tests in two processes, one per core)
PYTEST_XDIST_VERSION=3.8.0
# pandas and pyarrow: PySpark's pandas UDFs, which a test uses to check they are rejected
PANDAS_VERSION=2.3.3
PYARROW_VERSION=26.0.1
SBT_VERSION=$(sed -n 's/^sbt.version=//p' "$(dirname "${BASH_SOURCE[0]}")/../project/build.properties")
# Spark Connect's Python client (PySpark's `connect` extras; pandas and pyarrow are above)
GRPCIO_VERSION=1.85.1
GOOGLEAPIS_COMMON_PROTOS_VERSION=1.76.0
ZSTANDARD_VERSION=0.25.0
# The reference manual (dev/docs): Sphinx with autodoc, MyST for the Markdown pages, the Furo theme
SPHINX_VERSION=9.0.4
MYST_PARSER_VERSION=5.2.0
FURO_VERSION=2025.12.19
# Kafka (tests/test_kafka.py, dev/demo --kafka; fetched by dev/kafka-jars): the broker, started from its
# jars, and Spark's Kafka connector. Spark 4.3's connector is not published yet: the 4.2 one, the newest,
# runs on Spark 4.3 (tests/test_kafka.py checks its source and sink).
KAFKA_VERSION=4.3.1
SPARK_KAFKA_VERSION=4.2.0
# the benchmarks' plots in docs/ (bench/*.py)
MATPLOTLIB_VERSION=3.10.8
