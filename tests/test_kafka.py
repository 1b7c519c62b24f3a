"""Kafka in and out: a real Kafka broker (KRaft, started on loopback from its jars by
dev/kafka_broker.py), Spark's Kafka source and sink, and windowagg's streaming sliding and session
windows between them. kafka_job.py, a child process whose session has the connector's jars,
produces the generated clicks (some out of order, some late) to a topic, streams them through one
query per window kind in several micro-batches, with final windows to one topic and late rows to
another, and reads every topic back; the windows equal windowagg's batch result over the on-time
clicks, and the late topics hold exactly the late clicks. It also writes the Nexmark benchmark's events
to a topic with the benchmark's generator (bench/nexmark): the records are the events in arrival order,
and q5 streamed from them equals a count by hand.

The first run fetches the broker's and the connector's jars with Maven (dev/kafka-jars).
"""

import collections
import datetime
import json
import math
import os
import re
import socket
import subprocess
import sys

import pytest

from conftest import child_env, examples_jar
import kafka_job
import realtime_job
import streaming_support as ss

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "dev"))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "bench", "nexmark"))

import generator  # noqa: E402 (bench/nexmark: the Nexmark benchmark's generator)
import kafka_broker  # noqa: E402 (dev/ is put on the path just above)

EVENTS, LATE_IDS = kafka_job.events()
NEXMARK = kafka_job.nexmark_config()


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    """A running broker for this module's tests, stopped after them whatever happens."""
    kafka_broker.ensure_jars()
    with kafka_broker.KafkaBroker(str(tmp_path_factory.mktemp("kafka-broker"))) as running:
        yield running


def test_a_broker_whose_port_is_taken_starts_on_other_ports(tmp_path):
    """A port another process takes between its choice and the broker's bind is chosen again (two
    ports chosen at once were once the same, and every test of this module failed at its setup)."""
    kafka_broker.ensure_jars()
    assert len(set(kafka_broker.free_ports(2))) == 2
    broker = kafka_broker.KafkaBroker(str(tmp_path / "broker"))
    taken = broker.broker_port
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", taken))
        holder.listen()
        with broker:
            assert broker.broker_port != taken
            assert kafka_broker.answers_requests(broker.broker_port)


def run_job(script, broker, work, jars=()):
    """Runs a child job (kafka_job.py, realtime_job.py) against the broker, with Spark's Kafka
    connector and ``jars``; what it read back."""
    out = work / "read-back.json"
    env = child_env(PYTHONPATH=os.pathsep.join(p for p in [HERE, os.environ.get("PYTHONPATH", "")] if p))
    done = subprocess.run(
        [
            sys.executable, os.path.join(HERE, script),
            broker.bootstrap, str(work), str(out), ",".join([*kafka_broker.connector_jars(), *jars]),
        ],
        capture_output=True, text=True, timeout=600, env=env,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:] + "\nbroker log:\n" + broker.log()
    return json.loads(out.read_text())


@pytest.fixture(scope="module")
def read_back(broker, tmp_path_factory):
    """What kafka_job.py read back from its output topics."""
    return run_job("kafka_job.py", broker, tmp_path_factory.mktemp("kafka-job"))


def test_the_clicks_are_on_time_or_late_as_designed():
    """The checks below rely on it: every on-time click is at or after the watermark of the
    micro-batch that reads it (so no final window misses it, as batch would count it), and every
    late click is more than a window size and a session gap behind it."""
    reach = max(kafka_job.SLIDING_SECONDS, kafka_job.SESSION_GAP_SECONDS) * ss.SECOND
    marks = kafka_job.watermarks(EVENTS)
    for row, mark in zip(EVENTS, marks):
        if row["id"] in LATE_IDS:
            assert mark is not None and row["ts"] + reach < mark, row
        else:
            assert mark is None or row["ts"] >= mark, row
    out_of_order = sum(1 for a, b in zip(EVENTS, EVENTS[1:]) if b["ts"] < a["ts"] and b["id"] not in LATE_IDS)
    assert out_of_order > 20 and len(LATE_IDS) == 12


@pytest.mark.parametrize("name", sorted(kafka_job.definitions()))
def test_windows_read_back_from_kafka_equal_the_batch_windows_of_the_on_time_clicks(spark, read_back, name):
    on_time = [r for r in EVENTS if r["id"] not in LATE_IDS and r["user"] != kafka_job.FLUSH_USER]
    expected = kafka_job.batch_windows(spark, on_time, kafka_job.definitions()[name])
    got = read_back["topics"][name]["windows"]
    assert len(expected) > 30
    assert got == expected
    # several micro-batches of ROWS_PER_BATCH rows, the last window's closing in one more without data
    assert read_back["data_micro_batches"][name] == math.ceil(len(EVENTS) / kafka_job.ROWS_PER_BATCH) >= 5


@pytest.mark.parametrize("name", sorted(kafka_job.definitions()))
def test_the_late_topic_holds_exactly_the_late_clicks(read_back, name):
    late = sorted(json.dumps({"late_reason": "late", **r}, sort_keys=True) for r in EVENTS if r["id"] in LATE_IDS)
    assert read_back["topics"][name]["late"] == late
    assert read_back["observed_late_rows"][name] == len(LATE_IDS)
    assert read_back["topics"][name]["keys_not_their_user"] == 0


# nexmark-flink's layout of a record's event, field by field
NEXMARK_FIELDS = {
    "person": {"id": "id", "name": "name", "emailAddress": "email_address", "creditCard": "credit_card",
               "city": "city", "state": "state", "dateTime": "date_time", "extra": "extra"},
    "auction": {"id": "id", "itemName": "item_name", "description": "description", "initialBid": "initial_bid",
                "reserve": "reserve", "dateTime": "date_time", "expires": "expires", "seller": "seller",
                "category": "category", "extra": "extra"},
    "bid": {"auction": "auction", "bidder": "bidder", "price": "price", "channel": "channel", "url": "url",
            "dateTime": "date_time", "extra": "extra"},
}


def nexmark_time(ms):
    """Epoch milliseconds as nexmark-flink's JSON writes a TIMESTAMP(3), in UTC."""
    moment = datetime.datetime.fromtimestamp(ms // 1000, datetime.timezone.utc)
    return f"{moment:%Y-%m-%d %H:%M:%S}.{ms % 1000:03d}"


def test_the_nexmark_generator_writes_every_event_to_kafka_in_arrival_order(read_back):
    records = [json.loads(v) for v in read_back["nexmark"]["values"]]
    frames = generator.generate(NEXMARK)
    assert len(records) == NEXMARK.events == sum(len(f) for f in frames.values())
    types = {0: "person", 1: "auction", 2: "bid"}
    assert all(set(r) == {"event_type", types[r["event_type"]]} for r in records)
    for kind, fields in NEXMARK_FIELDS.items():
        # each kind's records, in the topic's order, are its frame's rows in theirs (arrival order)
        got = [r[kind] for r in records if types[r["event_type"]] == kind]
        want = [
            {name: nexmark_time(row[column]) if column in ("date_time", "expires") else row[column]
             for name, column in fields.items()}
            for row in frames[kind].to_dict("records")
        ]
        assert got == want, kind
    # and the kinds interleave as they arrive: out of order, by no more than the generator's bound
    latest, behind = None, []
    for r in records:
        t = datetime.datetime.strptime(r[types[r["event_type"]]]["dateTime"], "%Y-%m-%d %H:%M:%S.%f")
        if latest is not None and t < latest:
            behind.append(latest - t)
        latest = t if latest is None else max(latest, t)
    assert behind and max(behind) <= datetime.timedelta(milliseconds=generator.disorder_bound_ms(NEXMARK))


def test_nexmark_q5_read_from_kafka_as_a_stream_equals_its_windows_counted_by_hand(read_back):
    """q5's bids per auction in hopping windows of 10 s every 2 s (windowagg, streaming from the
    topic) against a count by hand of the bids' windows: every window the last watermark (the
    latest bid's time less the generator's disorder bound) has closed, end <= watermark."""
    bids = generator.generate(NEXMARK)["bid"]
    watermark = int(bids["date_time"].max()) - generator.disorder_bound_ms(NEXMARK)
    counts = collections.Counter()
    for auction, t in zip(bids["auction"], bids["date_time"]):
        start = int(t) - int(t) % 2_000
        for s in range(start, int(t) - 10_000, -2_000):
            counts[(int(auction), s, s + 10_000)] += 1
    want = sorted([a, s, e, n] for (a, s, e), n in counts.items() if e <= watermark)
    assert len(want) > 1_000
    assert sorted(read_back["nexmark"]["q5_counts"]) == want
    assert read_back["nexmark"]["data_micro_batches"] == math.ceil(NEXMARK.events / kafka_job.NEXMARK_PER_BATCH)


def test_the_demo_streams_clicks_through_kafka(broker, tmp_path):
    """The demo's Kafka mode (what dev/demo --kafka runs, here against this module's broker; its
    topics are its own) on a small input: every click is read, in the micro-batches asked for, and
    each query's late topic holds the late clicks its metrics count."""
    done = subprocess.run(
        [
            sys.executable, os.path.join(os.path.dirname(HERE), "examples", "python", "demo.py"), "--kafka",
            "--master", "local[2]",
            "--bootstrap-servers", broker.bootstrap, "--kafka-jars", kafka_broker.CONNECTOR_JARS,
            "--users", "10", "--events", "800", "--micro-batches", "3", "--out", str(tmp_path / "demo"),
        ],
        capture_output=True, text=True, timeout=600, env=child_env(),
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    summary = re.findall(
        r"^(sliding|session) .*: 800 clicks in 3 micro-batches -> (\d+) final windows in \S+, (\d+) late clicks "
        r"in \S+ \(observed metrics: late_rows (\d+)\)$",
        done.stdout,
        re.MULTILINE,
    )
    assert [kind for kind, *_ in summary] == ["sliding", "session"], done.stdout
    for _kind, windows, late, observed in summary:
        assert int(windows) > 0 and late == observed
    assert "The longest sessions, read back from demo-sessions:" in done.stdout


@pytest.fixture(scope="module")
def real_time(broker, tmp_path_factory):
    """What realtime_job.py read back: its real-time queries' output (run, stopped, restarted from
    their checkpoints) and the same queries' in micro-batches."""
    return run_job("realtime_job.py", broker, tmp_path_factory.mktemp("real-time-job"), [examples_jar()])


@pytest.mark.parametrize(
    "name", ["sliding", "tumbling", "hopping", "cumulative", "calendar", "unlimited", "table", "custom", "session", "final"]
)
def test_real_time_updates_restarted_from_a_checkpoint_equal_the_micro_batch_result(real_time, name):
    """For every kind, each window's last update in real-time mode (a row at a time; stopped after
    the first half of the clicks and restarted from its checkpoint for the second) equals the
    micro-batch query's, a merged session retracted in both; so do the final windows and the late
    rows."""
    got, expected = real_time["real_time"][name], real_time["micro_batch"][name]
    # not an empty comparison: every user has windows, many of them where windows are minutes long
    assert {json.loads(key)[0] for key in expected["windows"]} >= {f"user{i}" for i in range(realtime_job.USERS)}
    assert len(expected["windows"]) > 20 or name in ("calendar", "unlimited", "table", "custom")
    assert got["windows"] == expected["windows"]
    assert got["late"] == expected["late"]
    if name == "final":
        assert got["updates"] == len(got["windows"]), "each final window comes out once"
        assert sorted(json.loads(r)["id"] for r in got["late"]) == sorted(real_time["late_ids"])
    else:
        # a row at a time: every click updates a window of its own (but the late clicks, and the
        # flush click, a day ahead, in no table window)
        assert got["updates"] >= real_time["rows"] - len(real_time["late_ids"]) - 1


def test_real_time_processing_time_windows_count_every_click_once(real_time):
    """Processing-time windows in real-time mode take each click's time from the live clock as it
    is read, so no click falls in a window already past: the windows' last counts add up to every
    click, in both runs of the query."""
    windows = real_time["real_time"]["processing"]["windows"]
    assert sum(clicks for clicks, _total in windows.values()) == real_time["rows"]
