"""KIP-848 regular-expression subscriptions with confluent-kafka (librdkafka
2.16, group.protocol=consumer): two members subscribe to ^py-re-a.*; they
share the partitions of the matching topics and none of the topic that
does not match; a matching topic created later is assigned once the
broker resolves the regex again (within 10 s of its last resolution plus
a heartbeat); every record of the matching topics is consumed, none of
the other. A ledger of assign/revoke callbacks checks that no partition is
ever owned by two members at once. Exits non-zero on the first
difference; prints "all checks passed"."""

import sys
import time

from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from ledger import Ledger, check, poll_all

BOOT = sys.argv[1]
GROUP = "py-re-group"
REGEX = "^py-re-a.*"
MATCHING = ["py-re-a1", "py-re-a2"]
LATER = "py-re-a3"
OTHER = "py-re-b"
PARTITIONS = 3

LEDGER = Ledger()


class Member:
    def __init__(self, name):
        self.name = name
        self.seen = set()
        self.c = Consumer({
            "bootstrap.servers": BOOT,
            "group.id": GROUP,
            "group.protocol": "consumer",
            "auto.offset.reset": "earliest",
            "broker.address.family": "v4",
            "fetch.wait.max.ms": 100,
            "topic.metadata.refresh.interval.ms": 1000,
        })
        self.c.subscribe([REGEX], on_assign=self.on_assign, on_revoke=self.on_revoke,
                         on_lost=self.on_revoke)

    def on_assign(self, consumer, partitions):
        LEDGER.assigned(self.name, [(p.topic, p.partition) for p in partitions])

    def on_revoke(self, consumer, partitions):
        LEDGER.revoked(self.name, [(p.topic, p.partition) for p in partitions])

    def poll(self):
        m = self.c.poll(0.05)
        if m is None:
            return
        if m.error():
            raise KafkaException(m.error())
        self.seen.add((m.topic(), m.partition(), m.offset()))


def owned():
    return set(LEDGER.owner)


def partitions_of(topics):
    return {(t, p) for t in topics for p in range(PARTITIONS)}


def produce(topics):
    p = Producer({"bootstrap.servers": BOOT, "broker.address.family": "v4"})
    for t in topics:
        for part in range(PARTITIONS):
            p.produce(t, value=f"{t}-{part}".encode(), partition=part)
    p.flush(20)


def main():
    admin = AdminClient({"bootstrap.servers": BOOT, "broker.address.family": "v4"})
    for t in MATCHING + [OTHER]:
        admin.create_topics([NewTopic(t, PARTITIONS, 1)])[t].result(20)
    time.sleep(1)
    produce(MATCHING + [OTHER])

    members = [Member("m0"), Member("m1")]
    both_own_some = lambda: all(LEDGER.owned_by(m.name) for m in members)
    poll_all(members, lambda: owned() == partitions_of(MATCHING) and both_own_some(), 60,
             "the 2 members share the 6 partitions of the 2 matching topics")
    check(not any(t == OTHER for t, _ in owned()), "the topic that does not match is not assigned")

    admin.create_topics([NewTopic(LATER, PARTITIONS, 1)])[LATER].result(20)
    produce([LATER])
    poll_all(members, lambda: owned() == partitions_of(MATCHING + [LATER]), 60,
             f"{LATER}, created later, is assigned too")

    seen = lambda: {k for m in members for k in m.seen}
    want = {(t, p, 0) for (t, p) in partitions_of(MATCHING + [LATER])}
    poll_all(members, lambda: seen() >= want, 60, "every record of the matching topics consumed")
    check(not any(t == OTHER for t, _, _ in seen()), "no record of the other topic")
    check(not LEDGER.violations, "no partition owned by two members at once: "
          + "; ".join(LEDGER.violations))

    desc = admin.describe_consumer_groups([GROUP])[GROUP].result(20)
    check(str(desc.type).endswith("CONSUMER") and len(desc.members) == 2,
          f"describe: {desc.type}, {len(desc.members)} members")
    for m in members:
        m.c.close()
    print("all checks passed")


main()
