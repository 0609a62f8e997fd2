"""Online migration with confluent-kafka (librdkafka 2.16): a rolling
restart of 3 consumers from group.protocol=classic to consumer converts the
group to a KIP-848 consumer group (its classic members served through
JoinGroup/SyncGroup meanwhile); rolling them back converts it back when the
last consumer-protocol member leaves. A ledger of assign/revoke callbacks
checks that no partition is ever owned by two members at once; every record
is consumed and every partition's committed offset reaches its end. Exits
non-zero on the first difference; prints "all checks passed"."""

import sys
import time

from confluent_kafka import (ConsumerGroupType, Consumer, KafkaException, Producer,
                             TopicPartition)
from confluent_kafka.admin import AdminClient, NewTopic

from ledger import Ledger, check, commit, poll_all

BOOT = sys.argv[1]
TOPIC = "py-migration"
GROUP = "py-migration-group"
PARTITIONS = 12
PER_ROUND = 25


LEDGER = Ledger()



class Member:
    def __init__(self, name, protocol):
        self.name = name
        self.seen = {}
        config = {
            "bootstrap.servers": BOOT,
            "group.id": GROUP,
            "group.protocol": protocol,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "broker.address.family": "v4",
            "fetch.wait.max.ms": 100,
        }
        if protocol == "classic":
            config["heartbeat.interval.ms"] = 500
            config["session.timeout.ms"] = 10000
        self.c = Consumer(config)
        self.c.subscribe([TOPIC], on_assign=self.on_assign, on_revoke=self.on_revoke,
                         on_lost=self.on_lost)

    def on_assign(self, consumer, partitions):
        LEDGER.assigned(self.name, [p.partition for p in partitions])

    def on_revoke(self, consumer, partitions):
        # Commit what was read before giving the partitions up.
        self.commit()
        LEDGER.revoked(self.name, [p.partition for p in partitions])

    def on_lost(self, consumer, partitions):
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


def balanced(members):
    return LEDGER.balanced(members, PARTITIONS)


def group_type(admin):
    for kind in (ConsumerGroupType.CONSUMER, ConsumerGroupType.CLASSIC):
        listed = admin.list_consumer_groups(types={kind}).result(20)
        if any(g.group_id == GROUP for g in listed.valid):
            return kind
    return None


def produce(p, round_):
    for part in range(PARTITIONS):
        for i in range(PER_ROUND):
            p.produce(TOPIC, value=f"{round_}-{part}-{i}".encode(), partition=part)
    p.flush(20)


def main():
    admin = AdminClient({"bootstrap.servers": BOOT, "broker.address.family": "v4"})
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])[TOPIC].result(20)
    time.sleep(1)
    p = Producer({"bootstrap.servers": BOOT, "broker.address.family": "v4"})
    produce(p, 0)

    seen_by_gone = {}
    members = [Member(f"classic-{i}", "classic") for i in range(3)]
    poll_all(members, balanced(members), 60, "3 classic members own 4 partitions each")
    check(group_type(admin) == ConsumerGroupType.CLASSIC, "a classic group")

    def replace(i, name, protocol):
        gone = members[i]
        seen_by_gone.update(gone.seen)
        gone.close()
        members[i] = Member(name, protocol)
        poll_all(members, balanced(members), 90,
                 f"{gone.name} replaced by {name}: 4 partitions each")

    # Rolling restart to the consumer protocol: the first one converts
    # the group, the classic members go on inside it.
    replace(0, "consumer-0", "consumer")
    check(group_type(admin) == ConsumerGroupType.CONSUMER, "converted to a consumer group")
    replace(1, "consumer-1", "consumer")
    replace(2, "consumer-2", "consumer")
    produce(p, 1)

    # And back: the last consumer-protocol member leaving converts it back.
    replace(0, "classic-3", "classic")
    replace(1, "classic-4", "classic")
    check(group_type(admin) == ConsumerGroupType.CONSUMER, "still a consumer group")
    replace(2, "classic-5", "classic")
    check(group_type(admin) == ConsumerGroupType.CLASSIC, "converted back to a classic group")

    total = 2 * PARTITIONS * PER_ROUND
    seen = lambda: set(seen_by_gone) | {k for m in members for k in m.seen}
    poll_all(members, lambda: len(seen()) >= total, 60, "every record consumed")
    check(len(seen()) == total, f"all {total} records consumed")
    poll_all(members, lambda: all([m.commit() for m in members]), 30, "the last commits")
    check(not LEDGER.violations, "no partition owned by two members at once: "
          + "; ".join(LEDGER.violations))
    probe = Consumer({"bootstrap.servers": BOOT, "group.id": GROUP,
                      "broker.address.family": "v4"})
    committed = probe.committed([TopicPartition(TOPIC, i) for i in range(PARTITIONS)], timeout=20)
    probe.close()
    check(all(tp.offset == 2 * PER_ROUND for tp in committed),
          "every partition committed at its end: "
          + str([(tp.partition, tp.offset) for tp in committed]))
    for m in members:
        m.close()
    print("all checks passed")


main()
