"""Compaction with confluent-kafka (librdkafka), on brokers whose cleaner
looks every 200 ms: a topic with cleanup.policy=compact, 1 MiB segments,
min.cleanable.dirty.ratio 0.01 and delete.retention.ms 1 s takes 20,000
updates over 500 keys (one in five deleted by tombstones; optional
arguments before the bootstrap address: updates, keys and value bytes,
as 1000000 10000 16 for the million-record run); a consumer from
the beginning then reads each key's last value at the offset the producer
was given, far fewer records than were written, and no deleted key once
the tombstones' horizon has passed and the log was cleaned again. A record
without a key is refused with INVALID_RECORD. Exits non-zero on the first
difference; prints "all checks passed"."""

import sys
import time

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from ledger import check

BOOT = sys.argv[-1]
UPDATES, KEYS, VALUE_BYTES = (int(a) for a in (sys.argv[1:-1] or (20_000, 500, 200)))
TOPIC = f"compacted-{UPDATES}"
DELETED = set(range(0, KEYS, 5))


def produce(records):
    """Produces (key, value) pairs in order; returns key -> (offset, value)
    of each key's last record, from the delivery reports."""
    p = Producer({"bootstrap.servers": BOOT, "broker.address.family": "v4", "acks": "all",
                  "linger.ms": 5, "enable.idempotence": True, "batch.size": 1 << 20})
    last = {}

    def delivered(err, msg):
        if err is not None:
            check(False, f"delivered: {err}")
        last[msg.key()] = (msg.offset(), msg.value())

    for key, value in records:
        while True:
            try:
                p.produce(TOPIC, key=key, value=value, on_delivery=delivered)
                break
            except BufferError:  # the local queue is full: let deliveries drain
                p.poll(0.1)
        p.poll(0)
    check(p.flush(60) == 0, f"{len(records)} records produced")
    return last


def consume_all():
    c = Consumer({"bootstrap.servers": BOOT, "broker.address.family": "v4",
                  "group.id": f"reader-{time.time()}", "enable.auto.commit": False,
                  "auto.offset.reset": "earliest"})
    c.assign([TopicPartition(TOPIC, 0, -2)])
    _, high = c.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=10)
    seen = []
    deadline = time.time() + 120
    while time.time() < deadline:
        for m in c.consume(10_000, timeout=0.5):
            if m.error() is not None:
                check(False, f"no consume error: {m.error()}")
            seen.append((m.offset(), m.key(), m.value()))
        if seen and seen[-1][0] >= high - 1:
            break
    c.close()
    return seen


def wait_until(predicate, what, seconds=120):
    deadline = time.time() + seconds
    while time.time() < deadline:
        seen = consume_all()
        if predicate(seen):
            return seen
        time.sleep(0.3)
    check(False, what)


def main():
    admin = AdminClient({"bootstrap.servers": BOOT, "broker.address.family": "v4"})
    admin.create_topics([NewTopic(TOPIC, 1, 1, config={
        "cleanup.policy": "compact", "segment.bytes": str(1 << 20),
        "min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": "1000"})])[TOPIC].result(20)

    # 200-byte values: about 4,500 records a segment.
    updates = [(f"key-{i % KEYS}".encode(), f"value-{i}".ljust(VALUE_BYTES).encode())
               for i in range(UPDATES)]
    tombstones = [(f"key-{k}".encode(), None) for k in sorted(DELETED)]
    # More updates after the tombstones, so they are in sealed segments.
    filler = [(f"key-{i}".encode(), b"again".ljust(VALUE_BYTES)) for i in range(KEYS)
              if i not in DELETED] * 20
    last = produce(updates + tombstones + filler)
    check(len(last) == KEYS, "every key was written")

    # Sealed segments get cleaned: far fewer records than were written,
    # each key's last record (a tombstone for the deleted ones, kept until
    # its horizon) at its original offset.
    def compacted(seen):
        return len([o for o, _, _ in seen if o < UPDATES]) <= KEYS
    seen = wait_until(compacted, "the log was compacted")
    offsets = [o for o, _, _ in seen]
    check(offsets == sorted(set(offsets)), "offsets only grow")
    newest = {}
    for o, k, v in seen:
        newest[k] = (o, v)
    # A deleted key's tombstone may already be gone: its horizon can pass
    # while a million records are read.
    wrong = [(k, (o, v), newest.get(k)) for k, (o, v) in last.items()
             if newest.get(k) != (o, v) and not (v is None and k not in newest)]
    check(not wrong, f"each key reads its last record at its offset: {wrong[:5]}")

    # Past the tombstones' horizon, more updates make the log dirty again:
    # the next cleaning drops the deleted keys altogether.
    time.sleep(1.5)
    produce(filler)

    def tombstones_gone(seen):
        return not any(int(k.decode().split("-")[1]) in DELETED for _, k, _ in seen)
    wait_until(tombstones_gone, "the tombstones went after delete.retention.ms")

    # A record without a key: INVALID_RECORD.
    errors = []
    p = Producer({"bootstrap.servers": BOOT, "broker.address.family": "v4", "acks": "all",
                  "retries": 0})
    p.produce(TOPIC, value=b"no key", on_delivery=lambda err, msg: errors.append(err))
    p.flush(20)
    check(len(errors) == 1 and errors[0] is not None
          and errors[0].code() == KafkaError.INVALID_RECORD,
          f"a keyless record is refused with INVALID_RECORD: {errors}")
    print("all checks passed")


main()
