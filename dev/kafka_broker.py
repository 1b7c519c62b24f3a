"""A throwaway Kafka broker on loopback, for tests/test_kafka.py and `dev/demo --kafka`.

One JVM runs Kafka in KRaft mode as broker and controller at once, from the jars dev/kafka-jars
fetches (no distribution archive, no container): a fresh storage folder is formatted with a new
cluster id, the broker listens on 127.0.0.1 at free ports, topics are created on first write, and
the whole process group is stopped at the end, also when the caller fails::

    with KafkaBroker(work_dir) as broker:
        spark_df.write.format("kafka").option("kafka.bootstrap.servers", broker.bootstrap) ...

As a command, it fetches the jars, starts a broker and runs a command with the broker's address
appended as `--bootstrap-servers HOST:PORT`, then stops the broker (what `dev/demo --kafka` does):

    python dev/kafka_broker.py python examples/python/demo.py --kafka ...
"""

import base64
import glob
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import uuid
from typing import List, Optional

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BROKER_JARS = os.path.join(ROOT, "target", "kafka", "broker")
CONNECTOR_JARS = os.path.join(ROOT, "target", "kafka", "connector")

# Broker and controller in one node, one replica of everything, topics created on first write with
# one partition (a producer's order is then the order a stream reads).
SERVER_PROPERTIES = """\
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:{controller_port}
listeners=PLAINTEXT://127.0.0.1:{broker_port},CONTROLLER://127.0.0.1:{controller_port}
advertised.listeners=PLAINTEXT://127.0.0.1:{broker_port}
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
log.dirs={data_dir}
auto.create.topics.enable=true
num.partitions=1
default.replication.factor=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
"""

# Warnings and errors only, into the broker's log file (its standard output)
LOG4J2_PROPERTIES = """\
appender.out.type=Console
appender.out.name=out
appender.out.layout.type=PatternLayout
appender.out.layout.pattern=[%d] %p %m (%c)%n
rootLogger.level=WARN
rootLogger.appenderRef.out.ref=out
"""

# ApiVersions (key 18) version 0 with request header v1 (client id "windowagg"), the first request
# of every Kafka client: an answer shows the broker serves requests, not only that its port is open.
_CLIENT_ID = b"windowagg"
_API_VERSIONS = struct.pack(">hhih", 18, 0, 1, len(_CLIENT_ID)) + _CLIENT_ID
API_VERSIONS_REQUEST = struct.pack(">i", len(_API_VERSIONS)) + _API_VERSIONS


def ensure_jars() -> None:
    """Runs dev/kafka-jars, which fetches the broker's and the connector's jars unless already there."""
    done = subprocess.run(
        [os.path.join(ROOT, "dev", "kafka-jars")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    if done.returncode != 0:
        raise RuntimeError(f"dev/kafka-jars failed:\n{done.stderr[-3000:]}")


def connector_jars() -> List[str]:
    """The jars of Spark's Kafka source and sink (for spark.jars), fetched by dev/kafka-jars."""
    jars = sorted(glob.glob(os.path.join(CONNECTOR_JARS, "*.jar")))
    if not jars:
        raise FileNotFoundError(f"no Spark Kafka connector jars in {CONNECTOR_JARS}: run dev/kafka-jars")
    return jars


def free_ports(count: int) -> List[int]:
    """`count` ports free at this moment, all different: each is held until all are chosen (a port let
    go at once may be handed out again by the next bind)."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def new_cluster_id() -> str:
    """A random cluster id as Kafka writes one (16 bytes, URL-safe base64 without padding); like
    Kafka's own, never starting with '-', which a command line would take for an option."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode("ascii").rstrip("=")
        if not text.startswith("-"):
            return text


def java() -> str:
    home = os.environ.get("JAVA_HOME")
    path = os.path.join(home, "bin", "java") if home else shutil.which("java")
    if not path or not os.path.isfile(path):
        raise FileNotFoundError("no java found (set JAVA_HOME or put java on the PATH); Kafka needs JDK 17 or later")
    return path


def answers_requests(port: int) -> bool:
    """Whether the broker at 127.0.0.1:port answers an ApiVersions request without an error."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as conn:
            conn.sendall(API_VERSIONS_REQUEST)
            head = b""
            while len(head) < 10:  # size, correlation id, error code
                chunk = conn.recv(10 - len(head))
                if not chunk:
                    return False
                head += chunk
    except OSError:
        return False
    _size, correlation, error = struct.unpack(">iih", head)
    return correlation == 1 and error == 0


class KafkaBroker:
    """A single-node KRaft Kafka broker in ``work_dir`` (a temporary folder when None), listening on
    127.0.0.1; ``bootstrap`` is its address once started. Its log is ``work_dir/broker.log``."""

    def __init__(self, work_dir: Optional[str] = None, heap: str = "512m"):
        self._own_dir = work_dir is None
        self.work_dir = tempfile.mkdtemp(prefix="windowagg-kafka-") if work_dir is None else work_dir
        self.heap = heap
        self.log_path = os.path.join(self.work_dir, "broker.log")
        self._choose_ports()
        self._process: Optional[subprocess.Popen] = None

    def _choose_ports(self) -> None:
        self.broker_port, self.controller_port = free_ports(2)
        self.bootstrap = f"127.0.0.1:{self.broker_port}"

    def _jvm(self, *options: str) -> List[str]:
        if not glob.glob(os.path.join(BROKER_JARS, "kafka_2.13-*.jar")):
            raise FileNotFoundError(f"no Kafka broker jars in {BROKER_JARS}: run dev/kafka-jars")
        log_config = os.path.join(self.work_dir, "log4j2.properties")
        # short runs beside Spark: the quick compiler alone and the serial collector start the JVM
        # sooner and take less CPU (a third less to a ready broker)
        quick = ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"]
        classpath = os.path.join(BROKER_JARS, "*")
        return [java(), *quick, *options, f"-Dlog4j2.configurationFile={log_config}", "-cp", classpath]

    def start(self, timeout: float = 90, attempts: int = 3) -> "KafkaBroker":
        """Formats a fresh storage folder, starts the broker and waits until it answers requests. A
        port taken by another process between its choice and the broker's bind (``Address already
        in use`` in the log) is chosen again, with a fresh folder, up to ``attempts`` times.

        :raises RuntimeError: when the format fails, or the broker ends or does not answer within
            ``timeout`` seconds (the message ends with its log); the broker is stopped then.
        """
        data_dir = os.path.join(self.work_dir, "data")
        if os.path.exists(data_dir):
            raise RuntimeError(f"{data_dir} exists: a broker needs a fresh folder")
        attempt = 1
        while True:
            try:
                return self._start(data_dir, timeout)
            except BaseException as failed:
                # this attempt's own message (it ends with its log): after a failed format, broker.log is
                # still an earlier attempt's
                taken = isinstance(failed, RuntimeError) and "Address already in use" in str(failed)
                if attempt == attempts or not taken:
                    self.stop()
                    raise
            attempt += 1
            shutil.rmtree(data_dir, ignore_errors=True)
            self._choose_ports()

    def _start(self, data_dir: str, timeout: float) -> "KafkaBroker":
        os.makedirs(self.work_dir, exist_ok=True)
        properties = os.path.join(self.work_dir, "server.properties")
        with open(properties, "w", encoding="utf-8") as handle:
            handle.write(
                SERVER_PROPERTIES.format(
                    broker_port=self.broker_port, controller_port=self.controller_port, data_dir=data_dir
                )
            )
        with open(os.path.join(self.work_dir, "log4j2.properties"), "w", encoding="utf-8") as handle:
            handle.write(LOG4J2_PROPERTIES)

        format_command = self._jvm() + [
            "kafka.tools.StorageTool", "format", "--cluster-id", new_cluster_id(), "--config", properties,
        ]
        formatted = subprocess.run(
            format_command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120
        )
        if formatted.returncode != 0:
            raise RuntimeError(f"formatting the Kafka storage in {data_dir} failed:\n{formatted.stdout[-3000:]}")

        log = open(self.log_path, "w", encoding="utf-8")
        try:
            self._process = subprocess.Popen(
                self._jvm(f"-Xms{self.heap}", f"-Xmx{self.heap}", "-Djava.awt.headless=true")
                + ["kafka.Kafka", properties],
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group, stopped as a whole
            )
        finally:
            log.close()
        try:
            deadline = time.monotonic() + timeout
            while not answers_requests(self.broker_port):
                if self._process.poll() is not None:
                    raise RuntimeError(f"the Kafka broker ended with code {self._process.returncode}:\n{self.log()}")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the Kafka broker did not answer within {timeout:.0f} s:\n{self.log()}")
                time.sleep(0.2)
        except BaseException:
            self._stop_process()
            raise
        return self

    def log(self, tail: int = 3000) -> str:
        try:
            with open(self.log_path, encoding="utf-8", errors="replace") as handle:
                return handle.read()[-tail:]
        except OSError:
            return "(no log)"

    def stop(self, timeout: float = 30) -> None:
        """Stops the broker's process group (SIGTERM, then SIGKILL after ``timeout`` seconds) and
        removes the temporary folder it made. Does nothing when it is not running."""
        self._stop_process(timeout)
        if self._own_dir:
            shutil.rmtree(self.work_dir, ignore_errors=True)

    def _stop_process(self, timeout: float = 30) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            try:
                os.killpg(process.pid, signal.SIGTERM)
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=timeout)
            except ProcessLookupError:
                pass

    def __enter__(self) -> "KafkaBroker":
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()


def main(argv: List[str]) -> int:
    if not argv:
        print(
            "usage: python dev/kafka_broker.py COMMAND [ARGS...]  (runs COMMAND ARGS --bootstrap-servers HOST:PORT)",
            file=sys.stderr,
        )
        return 2
    ensure_jars()
    # a SIGTERM ends this process through the with-block below, which stops the broker
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    try:
        with KafkaBroker() as broker:
            # Ctrl-C reaches the command too (one terminal process group); the broker stops after it
            return subprocess.run([*argv, "--bootstrap-servers", broker.bootstrap]).returncode
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
