"""Topic configs with confluent-kafka (librdkafka 2.16): a topic created
with configs describes them as its own (DYNAMIC_TOPIC_CONFIG) and the
rest as defaults, with synonyms; an unknown config name or a bad value is
refused with INVALID_CONFIG and Apache's message, and no topic is made; a
broker describes its settings. IncrementalAlterConfigs (confluent-kafka)
sets, appends to, subtracts from and deletes a topic's configs and refuses
a bad value; AlterConfigs (kafka-python) sets one and refuses a bad one;
kafka-python sees each of a broker's settings with its type and lists
the config resources (ListConfigResources). Exits
non-zero on the first difference; prints "all checks passed"."""

import sys

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                   ConfigSource, NewTopic, ResourceType)
from kafka.admin import ConfigResource as KpResource
from kafka.admin import ConfigResourceType, KafkaAdminClient

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

    def alter(*ops):
        r = ConfigResource(ResourceType.TOPIC, "cfg-a", incremental_configs=[
            ConfigEntry(name, value, incremental_operation=op) for name, value, op in ops])
        admin.incremental_alter_configs([r])[r].result(20)
        return admin.describe_configs([res])[res].result(20)

    entries = alter(("retention.ms", "7200000", AlterConfigOpType.SET),
                    ("min.cleanable.dirty.ratio", None, AlterConfigOpType.DELETE))
    check(entries["retention.ms"].value == "7200000", "SET")
    dirty = entries["min.cleanable.dirty.ratio"]
    check(dirty.value == "0.5" and dirty.source == ConfigSource.DEFAULT_CONFIG.value,
          f"DELETE goes back to the default: {dirty.value} {dirty.source}")
    entries = alter(("cleanup.policy", "delete", AlterConfigOpType.SUBTRACT))
    check(entries["cleanup.policy"].value == "compact", "SUBTRACT from a list")
    entries = alter(("cleanup.policy", "delete", AlterConfigOpType.APPEND))
    check(entries["cleanup.policy"].value == "compact,delete", "APPEND to a list")
    try:
        alter(("retention.ms", "soon", AlterConfigOpType.SET))
        check(False, "a bad value is refused")
    except KafkaException as e:
        check(e.args[0].code() == KafkaError.INVALID_CONFIG
              and "Invalid value soon for configuration retention.ms" in e.args[0].str(),
              f"a bad value is refused: {e.args[0]}")
    check(admin.describe_configs([res])[res].result(20)["retention.ms"].value == "7200000",
          "and changes nothing")

    kp = KafkaAdminClient(bootstrap_servers=BOOT)
    result = kp.alter_configs([KpResource(ConfigResourceType.TOPIC, "cfg-a",
                                          configs={"retention.bytes": "1048576"})],
                              incremental=False)
    check(result == {"topic": {"cfg-a": "OK"}}, f"kafka-python AlterConfigs: {result}")
    try:
        refused = kp.alter_configs([KpResource(ConfigResourceType.TOPIC, "cfg-a",
                                               configs={"retention.ms": "abc"})],
                                   incremental=False)
    except Exception as e:  # kafka-python raises some errors, returns others
        refused = e
    check("InvalidConfig" in repr(refused), f"kafka-python AlterConfigs refused: {refused!r}")
    # kafka-python's test_describe_configs_broker_resource_returns_configs:
    # every setting of a broker carries its type (DescribeConfigs v3+).
    described = kp.describe_configs([KpResource(ConfigResourceType.BROKER, "0")],
                                    config_filter="all")["broker"]["0"]
    untyped = [n for n, c in described.items() if c["config_type"] in (0, "UNKNOWN")]
    check(len(described) > 40 and not untyped, f"{len(described)} broker settings, untyped: {untyped}")
    types = {n: described[n]["config_type"] for n in
             ("node.id", "log.dirs", "auto.create.topics.enable", "log.retention.bytes")}
    check(types == {"node.id": "INT", "log.dirs": "STRING", "auto.create.topics.enable": "BOOLEAN",
                    "log.retention.bytes": "LONG"}, f"broker settings' types: {types}")
    static = described["node.id"]["config_source"]
    check(static == "STATIC_BROKER_CONFIG", f"node.id is static, as in Apache: {static}")
    # ListConfigResources (Kafka 4.1's, which kafka-python reads kaas as).
    check(kp.get_broker_version_data(0).broker_version == (4, 1), "kafka-python sees Kafka 4.1")
    listed = kp.list_config_resources()
    brokers = sorted(str(b["broker_id"]) for b in kp.describe_cluster()["brokers"])
    check(sorted(listed.get("broker", [])) == brokers and "cfg-a" in listed.get("topic", []),
          f"every config resource listed: {listed}")
    check(list(kp.list_config_resources(["TOPIC"])) == ["topic"], "listed by type")
    try:
        kp.list_config_resources(["BROKER_LOGGER"])
        check(False, "BROKER_LOGGER is refused")
    except Exception as e:
        check("UnsupportedVersion" in repr(e), f"a type kaas does not list: {e!r}")
    kp.close()
    entries = admin.describe_configs([res])[res].result(20)
    own = sorted(n for n, e in entries.items()
                 if e.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value)
    # AlterConfigs replaces the whole set: kafka-python sends the topic's
    # other overrides along (read with DescribeConfigs first), so they stay.
    check(own == ["cleanup.policy", "retention.bytes", "retention.ms"]
          and entries["retention.bytes"].value == "1048576",
          f"AlterConfigs set the new one and kept those sent along: {own}")
    print("all checks passed")


main()
