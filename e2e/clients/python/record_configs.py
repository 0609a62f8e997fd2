"""A topic's record configs with confluent-kafka (librdkafka 2.16) and
kafka-python: under message.timestamp.type=LogAppendTime the delivery
report and the consumer see the broker's append time; a record outside
message.timestamp.before/after.max.ms (or more than an hour ahead, Apache's
default) fails with INVALID_TIMESTAMP and is never read, while its
neighbours in range are; compression.type stores a producer's lz4 as the
topic says (uncompressed takes several times the bytes in DescribeLogDirs)
and every record reads back. Exits non-zero on the first difference;
prints "all checks passed"."""

import sys
import time

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka import TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.admin import KafkaAdminClient

from ledger import check

BOOT = sys.argv[1]
HOUR = 3_600_000
VALUE = b"kaas " * 200


def now_ms():
    return int(time.time() * 1000)


def create(admin, name, config):
    admin.create_topics([NewTopic(name, 1, 1, config=config)])[name].result(20)


def produce(topic, records, one_by_one=True, **config):
    """Produces (key, timestamp or None) records, each in a request of
    its own unless not `one_by_one`; their delivery reports."""
    reports = []
    p = Producer({"bootstrap.servers": BOOT, "broker.address.family": "v4", "acks": "all",
                  "linger.ms": 5, "retries": 0, **config})
    for key, ts in records:
        kwargs = {"timestamp": ts} if ts is not None else {}
        p.produce(topic, value=VALUE, key=key.encode(), **kwargs,
                  on_delivery=lambda err, msg: reports.append((err, msg)))
        if one_by_one:
            # A refused record fails alone.
            p.flush(30)
    p.flush(30)
    check(len(reports) == len(records), f"every record to {topic} reported")
    return reports


def consume_all(topic, expected):
    c = Consumer({"bootstrap.servers": BOOT, "broker.address.family": "v4",
                  "group.id": f"read-{topic}", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, -2)])
    got = []
    deadline = time.time() + 30
    while len(got) < expected and time.time() < deadline:
        for m in c.consume(500, timeout=1):
            check(m.error() is None, f"no consume error: {m.error()}")
            got.append(m)
    # Nothing beyond what was expected.
    got.extend(m for m in c.consume(500, timeout=1) if m.error() is None)
    c.close()
    return got


def log_append_time(admin):
    create(admin, "rc-append", {"message.timestamp.type": "LogAppendTime"})
    before = now_ms()
    reports = produce("rc-append", [("a", 1000), ("b", None)])
    after = now_ms()
    for err, msg in reports:
        kind, ts = msg.timestamp()
        check(err is None and kind == TIMESTAMP_LOG_APPEND_TIME and before <= ts <= after,
              f"the delivery report carries the broker's append time: {err} {kind} {ts}")
    got = consume_all("rc-append", 2)
    check(len(got) == 2, f"both records read: {len(got)}")
    for m in got:
        kind, ts = m.timestamp()
        check(kind == TIMESTAMP_LOG_APPEND_TIME and before <= ts <= after,
              f"the consumer sees the append time, not the producer's 1000: {kind} {ts}")


def timestamp_bounds(admin):
    create(admin, "rc-bounded", {"message.timestamp.before.max.ms": "60000",
                                 "message.timestamp.after.max.ms": "60000"})
    now = now_ms()
    records = [("in-1", now), ("past", now - 10 * 60_000), ("in-2", now - 30_000),
               ("future", now + 10 * 60_000), ("in-3", now + 30_000)]
    reports = produce("rc-bounded", records)
    for (key, _), (err, msg) in zip(records, reports):
        if key.startswith("in"):
            check(err is None, f"{key} is within a minute and stored: {err}")
        else:
            check(err is not None and err.code() == KafkaError.INVALID_TIMESTAMP,
                  f"{key} is refused with INVALID_TIMESTAMP: {err}")
    got = consume_all("rc-bounded", 3)
    keys = [m.key().decode() for m in got]
    check(keys == ["in-1", "in-2", "in-3"], f"only the records in range are read: {keys}")
    check(all(m.timestamp()[0] == TIMESTAMP_CREATE_TIME for m in got), "with their create time")
    check(got[1].timestamp()[1] == now - 30_000, "the producer's own timestamp kept")

    create(admin, "rc-default", {})
    (err, _), = produce("rc-default", [("ahead", now_ms() + 2 * HOUR)])
    check(err is not None and err.code() == KafkaError.INVALID_TIMESTAMP,
          f"two hours ahead is refused under Apache's default: {err}")
    (err, _), = produce("rc-default", [("long-ago", 1000)])
    check(err is None, f"any past time is taken under Apache's default: {err}")


def round_trip(topic, count, producer_codec):
    """`count` records produced with `producer_codec` read back as sent."""
    reports = produce(topic, [(str(i), None) for i in range(count)], one_by_one=False,
                      **{"compression.type": producer_codec, "batch.num.messages": 50})
    check(all(err is None for err, _ in reports), f"{count} {producer_codec} records to {topic}")
    got = consume_all(topic, count)
    check([m.key().decode() for m in got] == [str(i) for i in range(count)]
          and all(m.value() == VALUE for m in got),
          f"every record of {topic} reads back as sent")


def compression(admin):
    count = 200
    sizes = {}
    for codec in ["producer", "uncompressed", "gzip", "zstd"]:
        topic = f"rc-{codec}"
        create(admin, topic, {"compression.type": codec})
        round_trip(topic, count, "lz4")
    kp = KafkaAdminClient(bootstrap_servers=BOOT)
    for b in kp.describe_log_dirs():
        for d in b["log_dirs"]:
            for t in d["topics"]:
                for p in t["partitions"]:
                    if t["name"].startswith("rc-") and p["partition_size"] > 0:
                        sizes[t["name"]] = p["partition_size"]
    kp.close()
    check(sizes.get("rc-uncompressed", 0) > 3 * sizes.get("rc-producer", 1 << 62),
          f"compression.type=uncompressed stores the lz4 records uncompressed: {sizes}")
    for codec in ["gzip", "zstd"]:
        check(0 < sizes.get(f"rc-{codec}", 0) < sizes["rc-uncompressed"] / 3,
              f"compression.type={codec} stores them compressed: {sizes}")
    # librdkafka's own batches of each codec, kept as the producer wrote them.
    for codec in ["gzip", "snappy", "zstd"]:
        topic = f"rc-from-{codec}"
        create(admin, topic, {})
        round_trip(topic, count, codec)


def main():
    admin = AdminClient({"bootstrap.servers": BOOT, "broker.address.family": "v4"})
    log_append_time(admin)
    timestamp_bounds(admin)
    compression(admin)
    print("all checks passed")


main()
