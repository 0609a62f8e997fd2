"""Transactions with confluent-kafka (librdkafka 2.16): a committed and an
aborted transaction over 3 partitions; read_committed readers see exactly
the committed records, read_uncommitted every record once and no control
record; the older of two producers with one transactional id is fenced.
Exits non-zero on the first difference; prints "all checks passed"."""

import sys
import time

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

BOOT = sys.argv[1]
TOPIC = "py-txn"
PARTITIONS = 3


def check(cond, what):
    if not cond:
        print("FAILED:", what)
        sys.exit(1)
    print("ok:", what)


def producer(txn_id):
    p = Producer({"bootstrap.servers": BOOT, "transactional.id": txn_id,
                  "transaction.timeout.ms": 60000, "broker.address.family": "v4"})
    p.init_transactions(20)
    return p


def send(p, prefix, per_partition):
    for part in range(PARTITIONS):
        for i in range(per_partition):
            p.produce(TOPIC, value=f"{prefix}-{part}-{i}".encode(), partition=part)
    p.flush(20)


def values(prefix, per_partition):
    return {f"{prefix}-{p}-{i}" for p in range(PARTITIONS) for i in range(per_partition)}


def read_all(isolation, at_least):
    c = Consumer({"bootstrap.servers": BOOT, "group.id": f"py-txn-{isolation}-{time.time()}",
                  "enable.auto.commit": False, "isolation.level": isolation,
                  "broker.address.family": "v4", "fetch.wait.max.ms": 100})
    c.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
    got, quiet, deadline = [], time.time(), time.time() + 30
    while time.time() < deadline:
        m = c.poll(0.1)
        if m is not None:
            if m.error():
                raise KafkaException(m.error())
            got.append(m.value().decode())
            quiet = time.time()
        elif len(got) >= at_least and time.time() - quiet > 2:
            break
    c.close()
    return got


admin = AdminClient({"bootstrap.servers": BOOT, "broker.address.family": "v4"})
for f in admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)]).values():
    f.result()

p = producer("py-txn-1")
p.begin_transaction()
send(p, "committed", 3)
p.commit_transaction(20)
p.begin_transaction()
send(p, "aborted", 3)
p.abort_transaction(20)
p.begin_transaction()
send(p, "after", 1)
p.commit_transaction(20)

committed = read_all("read_committed", 12)
check(set(committed) == values("committed", 3) | values("after", 1),
      "read_committed sees exactly the committed records")
check(len(committed) == 12, "each committed record once")
everything = read_all("read_uncommitted", 21)
check(len(everything) == 21 and set(everything) ==
      values("committed", 3) | values("aborted", 3) | values("after", 1),
      "read_uncommitted sees every record once and no control record")

zombie = producer("py-txn-zombie")
zombie.begin_transaction()
send(zombie, "zombie", 2)
successor = producer("py-txn-zombie")
successor.begin_transaction()
send(successor, "successor", 1)
successor.commit_transaction(20)
try:
    zombie.commit_transaction(20)
    check(False, "the zombie's commit fails")
except KafkaException as e:
    err = e.args[0]
    check(err.fatal(), f"the zombie is fenced, fatally ({err})")
committed = set(read_all("read_committed", 15))
check(not any(v.startswith("zombie") for v in committed), "nothing of the zombie's is visible")
check(values("successor", 1) <= committed, "the successor's transaction is visible")
print("all checks passed")
