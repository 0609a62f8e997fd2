"""Group configs (KIP-848) with confluent-kafka (librdkafka 2.16) and
kafka-python: IncrementalAlterConfigs on a GROUP resource sets a group's
consumer.session.timeout.ms and consumer.heartbeat.interval.ms,
DescribeConfigs names them GROUP_CONFIG and the rest DEFAULT_CONFIG with
the broker's values, a value outside the broker's bounds and an unknown
name are refused with INVALID_CONFIG and Apache's message, DELETE goes
back to the broker's value; a consumer-protocol consumer of the group
reads its records meanwhile; kafka-python sets and describes the same. Exits non-zero on the first difference;
prints "all checks passed"."""

import sys
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                   ConfigSource, NewTopic, ResourceType)
from kafka.admin import ConfigResource as KpResource
from kafka.admin import ConfigResourceType, KafkaAdminClient

from ledger import check

BOOT = sys.argv[1]
GROUP = "gc-group"
TOPIC = "gc-topic"


def alter(admin, *ops):
    entries = [ConfigEntry(name, value, incremental_operation=op) for name, op, value in ops]
    res = ConfigResource(ResourceType.GROUP, GROUP, incremental_configs=entries)
    return admin.incremental_alter_configs([res])[res].result(20)


def refused(admin, *ops):
    try:
        alter(admin, *ops)
    except KafkaException as e:
        return e.args[0]
    return None


def describe(admin):
    res = ConfigResource(ResourceType.GROUP, GROUP)
    return admin.describe_configs([res])[res].result(20)


def main():
    admin = AdminClient({"bootstrap.servers": BOOT, "broker.address.family": "v4"})
    admin.create_topics([NewTopic(TOPIC, 3, 1)])[TOPIC].result(20)

    entries = describe(admin)
    check(sorted(entries) == ["consumer.heartbeat.interval.ms", "consumer.session.timeout.ms",
                              "share.heartbeat.interval.ms", "share.record.lock.duration.ms",
                              "share.session.timeout.ms"],
          f"every group config described: {sorted(entries)}")
    default_interval = entries["consumer.heartbeat.interval.ms"].value
    session = entries["consumer.session.timeout.ms"]
    check(session.value == "45000" and session.source == ConfigSource.DEFAULT_CONFIG.value,
          f"the broker's session timeout by default: {session.value} {session.source}")

    alter(admin, ("consumer.session.timeout.ms", AlterConfigOpType.SET, "50000"),
          ("consumer.heartbeat.interval.ms", AlterConfigOpType.SET, "6000"))
    entries = describe(admin)
    for name, value in [("consumer.session.timeout.ms", "50000"),
                        ("consumer.heartbeat.interval.ms", "6000")]:
        e = entries[name]
        check(e.value == value and e.source == ConfigSource.GROUP_CONFIG.value,
              f"{name} is the group's own: {e.value} {e.source}")

    e = refused(admin, ("consumer.session.timeout.ms", AlterConfigOpType.SET, "70000"))
    check(e is not None and e.code() == KafkaError.INVALID_CONFIG
          and "consumer.session.timeout.ms must be less than or equal to "
              "group.consumer.max.session.timeout.ms" in e.str(),
          f"a session timeout above the broker's bound is refused: {e}")
    e = refused(admin, ("dummy.doesntexist", AlterConfigOpType.SET, "1"))
    check(e is not None and e.code() == KafkaError.INVALID_CONFIG
          and "Unknown group config name: dummy.doesntexist" in e.str(),
          f"an unknown name is refused: {e}")
    check(describe(admin)["consumer.session.timeout.ms"].value == "50000",
          "and they changed nothing")

    # A consumer-protocol member of the group reads what is produced.
    p = Producer({"bootstrap.servers": BOOT, "broker.address.family": "v4"})
    for i in range(30):
        p.produce(TOPIC, value=f"v{i}".encode())
    p.flush(20)
    c = Consumer({"bootstrap.servers": BOOT, "broker.address.family": "v4", "group.id": GROUP,
                  "group.protocol": "consumer", "auto.offset.reset": "earliest"})
    c.subscribe([TOPIC])
    seen = 0
    deadline = time.time() + 30
    while seen < 30 and time.time() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            seen += 1
    c.close()
    check(seen == 30, f"the group's consumer read every record: {seen}")

    alter(admin, ("consumer.heartbeat.interval.ms", AlterConfigOpType.DELETE, None))
    interval = describe(admin)["consumer.heartbeat.interval.ms"]
    check(interval.value == default_interval
          and interval.source == ConfigSource.DEFAULT_CONFIG.value,
          f"DELETE goes back to the broker's: {interval.value} {interval.source}")

    kp = KafkaAdminClient(bootstrap_servers=BOOT)
    ops = {"consumer.heartbeat.interval.ms": ("SET", "7000")}
    result = kp.alter_configs([KpResource(ConfigResourceType.GROUP, GROUP, configs=ops)],
                              incremental=True)
    check(result == {"group": {GROUP: "OK"}}, f"kafka-python: IncrementalAlterConfigs: {result}")
    got = kp.describe_configs([KpResource(ConfigResourceType.GROUP, GROUP)],
                              config_filter="all")["group"][GROUP]
    interval = got["consumer.heartbeat.interval.ms"]
    check(interval["value"] == "7000" and interval["config_source"] == "DYNAMIC_GROUP_CONFIG"
          and interval["config_type"] == "INT",
          f"kafka-python: the group's own interval: {interval}")
    check(got["share.record.lock.duration.ms"]["value"] == "30000"
          and got["share.record.lock.duration.ms"]["config_source"] == "DEFAULT_CONFIG",
          "kafka-python: a share config's default")
    kp.close()
    print("all checks passed")


if __name__ == "__main__":
    main()
