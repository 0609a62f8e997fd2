"""Retention with confluent-kafka (librdkafka 2.16), on brokers that check
every half second: a topic kept to 1 MiB per partition (retention.bytes)
drops its oldest segments and a consumer from the beginning starts at the
new log start offset, with everything after it; a topic whose records are
two hours old under retention.ms of one hour is emptied, the log going on
at the same offsets; retention.ms altered on a live topic takes effect.
Exits non-zero on the first difference; prints "all checks passed"."""

import sys
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                   NewTopic, ResourceType)

from ledger import check

BOOT = sys.argv[1]
MIB = 1 << 20
VALUE = b"x" * 1000


def produce(topic, count, timestamp_ms=None):
    p = Producer({"bootstrap.servers": BOOT, "broker.address.family": "v4", "acks": "all",
                  "linger.ms": 5})
    for i in range(count):
        kwargs = {"timestamp": timestamp_ms} if timestamp_ms else {}
        p.produce(topic, value=VALUE, key=str(i).encode(), **kwargs)
        p.poll(0)
    check(p.flush(30) == 0, f"{count} records produced to {topic}")


def watermarks(topic):
    c = Consumer({"bootstrap.servers": BOOT, "broker.address.family": "v4", "group.id": "wm"})
    try:
        return c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
    finally:
        c.close()


def wait_for_start(topic, above, seconds=20):
    deadline = time.time() + seconds
    low, high = watermarks(topic)
    while low <= above and time.time() < deadline:
        time.sleep(0.2)
        low, high = watermarks(topic)
    return low, high


def consume_all(topic, expected):
    c = Consumer({"bootstrap.servers": BOOT, "broker.address.family": "v4",
                  "group.id": f"from-start-{topic}", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, -2)])
    offsets = []
    deadline = time.time() + 30
    while len(offsets) < expected and time.time() < deadline:
        for m in c.consume(500, timeout=1):
            check(m.error() is None, f"no consume error: {m.error()}")
            offsets.append(m.offset())
    c.close()
    return offsets


def main():
    admin = AdminClient({"bootstrap.servers": BOOT, "broker.address.family": "v4"})
    admin.create_topics([
        NewTopic("ret-size", 1, 1, config={"segment.bytes": str(MIB),
                                           "retention.bytes": str(MIB)}),
        NewTopic("ret-time", 1, 1, config={"segment.bytes": str(MIB),
                                           "retention.ms": "3600000"}),
        NewTopic("ret-alter", 1, 1, config={"segment.bytes": str(MIB)}),
    ])["ret-alter"].result(20)
    time.sleep(0.5)

    produce("ret-size", 5000)
    low, high = wait_for_start("ret-size", 0)
    check(high == 5000 and low > 0, f"retention.bytes dropped old segments: [{low}, {high})")
    check((high - low) * len(VALUE) >= MIB, f"at least 1 MiB is kept: {high - low} records")
    offsets = consume_all("ret-size", high - low)
    check(offsets == list(range(low, high)),
          f"from the beginning: the new log start offset, then everything "
          f"({offsets[:1]}..{offsets[-1:]}, {len(offsets)} records)")

    two_hours_ago = int(time.time() * 1000) - 2 * 3600 * 1000
    produce("ret-time", 3000, timestamp_ms=two_hours_ago)
    low, high = wait_for_start("ret-time", 2999)
    check((low, high) == (3000, 3000), f"records past retention.ms are gone: [{low}, {high})")
    produce("ret-time", 10)
    check(watermarks("ret-time") == (3000, 3010), "the log goes on at the same offsets")

    produce("ret-alter", 3000, timestamp_ms=two_hours_ago)
    time.sleep(1.5)
    check(watermarks("ret-alter")[0] == 0, "a week's retention keeps two-hour-old records")
    res = ConfigResource(ResourceType.TOPIC, "ret-alter", incremental_configs=[
        ConfigEntry("retention.ms", "3600000", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([res])[res].result(20)
    low, high = wait_for_start("ret-alter", 2999)
    check((low, high) == (3000, 3000), f"retention.ms set on the live topic acts: [{low}, {high})")
    print("all checks passed")


main()
