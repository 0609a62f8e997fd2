"""kafka-python against a kaas cluster: a consumer group, then the admin
surface — list, describe, alter offsets, OffsetDelete (kafka-python alone
among our clients sends it), remove members, delete the group.

Usage: python3 groups.py BOOTSTRAP. Exits non-zero with a message on the
first behaviour that differs from Apache Kafka's.
"""

import sys
import time

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic
from kafka.structs import OffsetAndMetadata

BOOTSTRAP = sys.argv[1]
SUFFIX = sys.argv[2] if len(sys.argv) > 2 else ""
TOPIC = "py-topic" + SUFFIX
GROUP = "py-group" + SUFFIX
PARTITIONS = 4
MESSAGES = 200


def check(cond, what):
    if not cond:
        print(f"FAILED: {what}", file=sys.stderr)
        sys.exit(1)
    print(f"ok: {what}")


def field(obj, *names):
    """kafka-python 3 answers with dicts; older versions with tuples/objects."""
    for n in names:
        if isinstance(obj, dict) and n in obj:
            return obj[n]
        if hasattr(obj, n):
            return getattr(obj, n)
    return None


def describe(admin, group):
    d = admin.describe_groups([group])
    return d[group] if isinstance(d, dict) else d[0]


def group_names(admin):
    return [field(g, "group_id") or (g[0] if isinstance(g, tuple) else g) for g in admin.list_groups()]


def committed(admin, group):
    """{partition: offset} of the group's committed offsets on TOPIC."""
    specs = admin.list_group_offsets({group: None})
    offsets = specs[group] if isinstance(specs, dict) and group in specs else specs
    return {tp.partition: om.offset for tp, om in offsets.items() if tp.topic == TOPIC}


admin = KafkaAdminClient(bootstrap_servers=BOOTSTRAP, client_id="py-admin")
admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])

producer = KafkaProducer(bootstrap_servers=BOOTSTRAP, acks="all")
for i in range(MESSAGES):
    producer.send(TOPIC, value=f"m-{i}".encode(), partition=i % PARTITIONS)
producer.flush()
producer.close()

consumer = KafkaConsumer(
    TOPIC,
    bootstrap_servers=BOOTSTRAP,
    group_id=GROUP,
    client_id="py-consumer",
    auto_offset_reset="earliest",
    enable_auto_commit=False,
    session_timeout_ms=10000,
    heartbeat_interval_ms=500,
)
seen = 0
deadline = time.time() + 60
while seen < MESSAGES and time.time() < deadline:
    for _tp, records in consumer.poll(timeout_ms=500).items():
        seen += len(records)
check(seen == MESSAGES, f"consumed {seen} of {MESSAGES} messages in a group")
consumer.commit()

names = group_names(admin)
check(GROUP in names, f"list_groups shows the group: {names}")

described = describe(admin, GROUP)
state = field(described, "state", "group_state")
members = field(described, "members") or []
check(state == "Stable", f"describe_groups says Stable: {described}")
check(len(members) == 1, f"one member described: {members}")
member = members[0]
check(field(member, "client_id") == "py-consumer", f"member client id: {member}")
check(str(field(member, "client_host")).startswith("/"), f"member host as Apache formats it: {member}")

offsets = committed(admin, GROUP)
check(sum(offsets.values()) == MESSAGES, f"committed offsets add up to {MESSAGES}: {offsets}")

# OffsetDelete on a group that is subscribed to the topic: refused per
# partition with GROUP_SUBSCRIBED_TO_TOPIC.
result = admin.delete_group_offsets(GROUP, [TopicPartition(TOPIC, 0)])
error = result.get(TopicPartition(TOPIC, 0))
check(error is not None and "GroupSubscribedToTopic" in getattr(error, "__name__", str(error)),
      f"OffsetDelete of a subscribed topic: GROUP_SUBSCRIBED_TO_TOPIC ({result})")

consumer.close()  # LeaveGroup: the group goes Empty

described = describe(admin, GROUP)
state = field(described, "state", "group_state")
check(state == "Empty", f"after close the group is Empty: {described}")

admin.alter_group_offsets(GROUP, {TopicPartition(TOPIC, 1): OffsetAndMetadata(7, "", -1)})
check(committed(admin, GROUP)[1] == 7, "alter_group_offsets moved partition 1 to 7")

# Altering offsets of a topic that does not exist (or a partition the topic
# does not have) answers UNKNOWN_TOPIC_OR_PARTITION, as Apache's KafkaApis.
missing = [TopicPartition("py-no-such-topic" + SUFFIX, 0), TopicPartition(TOPIC, PARTITIONS)]
result = admin.alter_group_offsets(GROUP, {tp: OffsetAndMetadata(3, "", -1) for tp in missing})
for tp in missing:
    name = getattr(result.get(tp), "__name__", str(result.get(tp)))
    check("UnknownTopicOrPartition" in name, f"alter_group_offsets of {tp}: UNKNOWN_TOPIC_OR_PARTITION ({name})")
check(PARTITIONS not in committed(admin, GROUP), "nothing stored for the partition that does not exist")

result = admin.delete_group_offsets(GROUP, [TopicPartition(TOPIC, 0)])
error = result.get(TopicPartition(TOPIC, 0))
check(error is None or getattr(error, "__name__", "") == "NoError",
      f"OffsetDelete on the Empty group succeeded: {result}")
check(0 not in committed(admin, GROUP), "OffsetDelete removed partition 0's offset")

try:
    result = admin.delete_group_offsets("py-no-such-group" + SUFFIX, [TopicPartition(TOPIC, 0)])
    error = result.get(TopicPartition(TOPIC, 0))
    name = getattr(error, "__name__", str(error))
except Exception as e:  # noqa: BLE001 - a group-level error raises
    name = type(e).__name__
check("GroupIdNotFound" in name, f"OffsetDelete of an unknown group: GROUP_ID_NOT_FOUND ({name})")

admin.delete_groups([GROUP])
names = group_names(admin)
check(GROUP not in names, "the deleted group is gone from list_groups")
admin.close()
print("kafka-python: all checks passed")
