"""Client quotas as confluent-kafka (librdkafka) meets them: a producer and
a consumer over their byte-rate quotas (set by the test before the cluster
starts: client id py-quota-producer 100,000 B/s of Produce,
py-quota-consumer 200,000 B/s of Fetch; the brokers measure over 2 windows
of 1 s) see librdkafka's throttle callback fire with the broker's
throttle_time_ms (KIP-219) and are held to their quotas. Exits non-zero on
the first difference; prints "all checks passed"."""

import sys
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from ledger import check

BOOT = sys.argv[1]
TOPIC = "py-quotas"
PRODUCE_RATE, FETCH_RATE = 100_000, 200_000
RECORD = 1000


def main():
    admin = AdminClient({"bootstrap.servers": BOOT})
    admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result()

    throttles = []
    producer = Producer({
        "bootstrap.servers": BOOT,
        "client.id": "py-quota-producer",
        "linger.ms": 0,
        "throttle_cb": lambda event: throttles.append(event.throttle_time),
    })
    value = b"q" * RECORD
    produced = 0

    def send_one():
        nonlocal produced
        producer.produce(TOPIC, value)
        producer.flush(30)
        produced += 1

    # Until the broker throttles (bounded): it follows the quota from start.
    deadline = time.monotonic() + 30
    while not throttles:
        check(time.monotonic() < deadline, "the producer throttled within 30 s")
        send_one()
        producer.poll(0)
    check(max(throttles) > 0, f"the throttle callback fired: {max(throttles):.3f} s")
    start, measured = time.monotonic(), 300
    for _ in range(measured):
        send_one()
    seconds = time.monotonic() - start
    # Over 2 windows of 1 s the producer may be one window ahead, no more.
    check(measured * RECORD <= PRODUCE_RATE * (seconds + 1),
          f"the producer held to its quota: {measured * RECORD / seconds:.0f} B/s over {seconds:.1f} s")

    consumer_throttles = []
    consumer = Consumer({
        "bootstrap.servers": BOOT,
        "client.id": "py-quota-consumer",
        "group.id": "py-quotas",
        "enable.auto.commit": False,
        "throttle_cb": lambda event: consumer_throttles.append(event.throttle_time),
    })
    consumer.assign([TopicPartition(TOPIC, 0, 0)])
    read, deadline, start = 0, time.monotonic() + 60, time.monotonic()
    while read < produced:
        check(time.monotonic() < deadline, f"read {produced} records in time: {read}")
        for m in consumer.consume(500, timeout=0.2):
            check(m.error() is None, f"a record read: {m.error()}")
            read += 1
    seconds = time.monotonic() - start
    consumer.close()
    check(read == produced, f"every record read once: {read} of {produced}")
    check(consumer_throttles and max(consumer_throttles) > 0,
          f"the consumer's throttle callback fired: {consumer_throttles[:3]}")
    check(produced * RECORD <= FETCH_RATE * (seconds + 1),
          f"the consumer held to its quota: {produced * RECORD / seconds:.0f} B/s over {seconds:.1f} s")
    print("all checks passed")


if __name__ == "__main__":
    main()
