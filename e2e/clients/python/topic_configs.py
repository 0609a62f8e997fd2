"""Topic configs with confluent-kafka (librdkafka 2.16): a topic created
with configs describes them as its own (DYNAMIC_TOPIC_CONFIG) and the
rest as defaults, with synonyms; an unknown config name or a bad value is
refused with INVALID_CONFIG and Apache's message, and no topic is made; a
broker describes its settings. Exits non-zero on the first difference;
prints "all checks passed"."""

import sys

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (AdminClient, ConfigResource, ConfigSource, NewTopic,
                                   ResourceType)

from ledger import check

BOOT = sys.argv[1]


def create_error(admin, name, config):
    try:
        admin.create_topics([NewTopic(name, 1, 1, config=config)])[name].result(20)
    except KafkaException as e:
        return e.args[0]
    return None


def main():
    admin = AdminClient({"bootstrap.servers": BOOT, "broker.address.family": "v4"})
    admin.create_topics([NewTopic("cfg-a", 3, 1, config={
        "retention.ms": "3600000",
        "cleanup.policy": "compact,delete",
        "min.cleanable.dirty.ratio": "0.25",
    })])["cfg-a"].result(20)

    res = ConfigResource(ResourceType.TOPIC, "cfg-a")
    entries = admin.describe_configs([res])[res].result(20)
    retention = entries["retention.ms"]
    check(retention.value == "3600000" and retention.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value,
          f"retention.ms is the topic's own: {retention.value} {retention.source}")
    check(entries["cleanup.policy"].value == "compact,delete", "cleanup.policy as given")
    check(entries["min.cleanable.dirty.ratio"].value == "0.25", "a ratio")
    segment = entries["segment.bytes"]
    check(segment.source == ConfigSource.DEFAULT_CONFIG.value and segment.value == "268435456",
          f"segment.bytes is kaas's default: {segment.value} {segment.source}")
    check(list(segment.synonyms) == ["log.segment.bytes"],
          f"its broker synonym: {list(segment.synonyms)}")
    check(entries["compression.type"].value == "producer", "compression.type's default")
    check(len(entries) >= 30, f"every topic config described ({len(entries)})")

    e = create_error(admin, "cfg-bad", {"dummy.doesntexist": "1"})
    check(e is not None and e.code() == KafkaError.INVALID_CONFIG
          and "Unknown topic config name: dummy.doesntexist" in e.str(),
          f"an unknown config name is refused: {e}")
    e = create_error(admin, "cfg-bad", {"retention.ms": "abc"})
    check(e is not None and e.code() == KafkaError.INVALID_CONFIG
          and "Invalid value abc for configuration retention.ms: Not a number of type LONG" in e.str(),
          f"a bad value is refused: {e}")
    topics = admin.list_topics(timeout=20).topics
    check("cfg-bad" not in topics, "no topic was created")

    missing = ConfigResource(ResourceType.TOPIC, "cfg-missing")
    try:
        admin.describe_configs([missing])[missing].result(20)
        check(False, "describing a missing topic fails")
    except KafkaException as e:
        check(e.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART,
              f"a missing topic: {e.args[0]}")

    broker = ConfigResource(ResourceType.BROKER, "0")
    entries = admin.describe_configs([broker])[broker].result(20)
    check("num.partitions" in entries and entries["num.partitions"].is_read_only,
          f"broker 0 describes its settings ({len(entries)})")
    print("all checks passed")


main()
