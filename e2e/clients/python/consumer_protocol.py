"""The KIP-848 consumer protocol with confluent-kafka (librdkafka 2.16,
group.protocol=consumer): 3 members share 12 partitions, each owned once;
a 4th joins and one leaves; every record is consumed and committed. A
ledger of assign/revoke callbacks checks that no partition is ever owned by
two members at once. Exits non-zero on the first difference; prints "all
checks passed"."""

import sys
import time

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from ledger import Ledger, check, commit, poll_all

BOOT = sys.argv[1]
TOPIC = "py-kip848"
GROUP = "py-kip848-group"
PARTITIONS = 12
PER_PARTITION = 50


LEDGER = Ledger()


class Member:
    def __init__(self, name):
        self.name = name
        self.seen = {}
        self.c = Consumer({
            "bootstrap.servers": BOOT,
            "group.id": GROUP,
            "group.protocol": "consumer",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "broker.address.family": "v4",
            "fetch.wait.max.ms": 100,
        })
        self.c.subscribe([TOPIC], on_assign=self.on_assign, on_revoke=self.on_revoke,
                         on_lost=self.on_revoke)

    def on_assign(self, consumer, partitions):
        LEDGER.assigned(self.name, [p.partition for p in partitions])

    def on_revoke(self, consumer, partitions):
        # Commit what was read before giving the partitions up.
        self.commit()
        LEDGER.revoked(self.name, [p.partition for p in partitions])

    def poll(self):
        m = self.c.poll(0.05)
        if m is None:
            return
        if m.error():
            raise KafkaException(m.error())
        self.seen[(m.partition(), m.offset())] = m.value()

    def commit(self):
        return commit(self.name, self.c)

    def close(self):
        self.commit()
        self.c.close()


def main():
    admin = AdminClient({"bootstrap.servers": BOOT, "broker.address.family": "v4"})
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])[TOPIC].result(20)
    time.sleep(1)
    p = Producer({"bootstrap.servers": BOOT, "broker.address.family": "v4"})
    for part in range(PARTITIONS):
        for i in range(PER_PARTITION):
            p.produce(TOPIC, value=f"{part}-{i}".encode(), partition=part)
    p.flush(20)

    # Reconciliation moves partitions a step at a time: wait for the
    # balanced end state (the ledger checks every step on the way).
    shares = lambda ms: LEDGER.balanced(ms, PARTITIONS)
    members = [Member(f"m{i}") for i in range(3)]
    poll_all(members, shares(members), 60, "3 members own 4 of the 12 partitions each")

    members.append(Member("m3"))
    poll_all(members, shares(members), 60, "4 members own 3 partitions each")

    leaving = members.pop(0)
    leaving_seen = leaving.seen
    leaving.close()
    poll_all(members, shares(members), 60, "the 3 left own 4 partitions each")

    total = PARTITIONS * PER_PARTITION
    seen = lambda: set(leaving_seen) | {k for m in members for k in m.seen}
    poll_all(members, lambda: len(seen()) >= total, 60, "every record consumed")
    check(len(seen()) == total, f"all {total} records consumed")
    poll_all(members, lambda: all([m.commit() for m in members]), 30, "the last commits")
    check(not LEDGER.violations, "no partition owned by two members at once: "
          + "; ".join(LEDGER.violations))

    # The group's committed offsets cover every record.
    probe = Consumer({"bootstrap.servers": BOOT, "group.id": GROUP,
                      "broker.address.family": "v4"})
    committed = probe.committed([TopicPartition(TOPIC, i) for i in range(PARTITIONS)], timeout=20)
    probe.close()
    check(all(tp.offset == PER_PARTITION for tp in committed),
          "every partition committed at its end: "
          + str([(tp.partition, tp.offset) for tp in committed]))
    # The admin client describes the group with ConsumerGroupDescribe.
    desc = admin.describe_consumer_groups([GROUP])[GROUP].result(20)
    owned = sorted(tp.partition for mem in desc.members for tp in mem.assignment.topic_partitions)
    check(str(desc.type).endswith("CONSUMER") and str(desc.state).endswith("STABLE")
          and len(desc.members) == 3 and owned == list(range(PARTITIONS)),
          f"describe: {desc.type} {desc.state}, {len(desc.members)} members, partitions {owned}")
    for m in members:
        m.close()
    print("all checks passed")


main()
