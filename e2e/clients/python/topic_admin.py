"""Topics as the Python admin clients manage them, beside topic_configs.py
(configs) and the Java admin's TopicAdmin.java: confluent-kafka
(librdkafka 2.16) and kafka-python 3 each create a topic with configs,
add partitions and are refused a decrease with INVALID_PARTITIONS, delete
records (the low watermark and ListOffsets earliest move, also when the
ListOffsets is pipelined behind the DeleteRecords), and describe
the cluster; kafka-python alters configs incrementally with each
operation (SET, DELETE, APPEND, SUBTRACT), is refused a bad value with
INVALID_CONFIG, and describes the log dirs (each partition's bytes on its
leader). Exits non-zero on the first difference; prints "all checks
passed"."""

import sys

from confluent_kafka import KafkaError, KafkaException, Producer, TopicCollection
from confluent_kafka import TopicPartition as CkPartition
from confluent_kafka.admin import AdminClient, NewPartitions, OffsetSpec
from confluent_kafka.admin import NewTopic as CkTopic
from kafka import TopicPartition as KpPartition
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewTopic
from kafka.errors import InvalidConfigurationError, InvalidPartitionsError

from ledger import check

BOOT = sys.argv[1]


def produce(topic, partition, n):
    p = Producer({"bootstrap.servers": BOOT, "broker.address.family": "v4", "acks": "all"})
    for i in range(n):
        p.produce(topic, value=f"r{i}".encode(), partition=partition)
    check(p.flush(30) == 0, f"{n} records produced to {topic}/{partition}")


def confluent():
    admin = AdminClient({"bootstrap.servers": BOOT, "broker.address.family": "v4"})
    topic = "ck-admin"
    admin.create_topics([CkTopic(topic, 1, 1, config={"retention.ms": "3600000"})])[topic].result(20)

    admin.create_partitions([NewPartitions(topic, 3)])[topic].result(20)
    described = admin.describe_topics(TopicCollection([topic]))[topic].result(20)
    check(len(described.partitions) == 3, "confluent-kafka: 3 partitions after CreatePartitions")
    try:
        admin.create_partitions([NewPartitions(topic, 2)])[topic].result(20)
        check(False, "a decrease is refused")
    except KafkaException as e:
        err = e.args[0]
        check(err.code() == KafkaError.INVALID_PARTITIONS
              and err.str() == f"The topic {topic} currently has 3 partition(s); 2 would not be an increase.",
              f"confluent-kafka: a decrease is refused with INVALID_PARTITIONS: {err}")

    produce(topic, 0, 10)
    tp = CkPartition(topic, 0, 4)
    deleted = admin.delete_records([tp])
    low = next(iter(deleted.values())).result(20).low_watermark
    check(low == 4, f"confluent-kafka: DeleteRecords moves the low watermark to 4: {low}")
    earliest = next(iter(admin.list_offsets(
        {CkPartition(topic, 0): OffsetSpec.earliest()}).values())).result(20).offset
    check(earliest == 4, f"confluent-kafka: ListOffsets earliest is the new start: {earliest}")
    # As confluent-kafka's own test_delete_records: ListOffsets asked
    # before DeleteRecords is answered (both go to the leader on one
    # connection, pipelined) must see the deletion, as Apache runs a
    # connection's requests in order.
    for to in (5, 6, 7):
        deleted = admin.delete_records([CkPartition(topic, 0, to)])
        listed = admin.list_offsets({CkPartition(topic, 0): OffsetSpec.earliest()})
        low = next(iter(deleted.values())).result(20).low_watermark
        earliest = next(iter(listed.values())).result(20).offset
        check(low == to and earliest == to,
              f"confluent-kafka: ListOffsets pipelined behind DeleteRecords to {to} sees it: "
              f"low watermark {low}, earliest {earliest}")

    cluster = admin.describe_cluster().result(20)
    check(len(cluster.nodes) == 3 and cluster.cluster_id and cluster.controller is not None,
          f"confluent-kafka: DescribeCluster: {cluster.cluster_id}, {len(cluster.nodes)} brokers")


def kafka_python():
    admin = KafkaAdminClient(bootstrap_servers=BOOT)
    topic = "kp-admin"
    created = admin.create_topics([NewTopic(topic, 1, 1, topic_configs={
        "retention.ms": "3600000", "cleanup.policy": "delete"})])
    sources = {k: v["config_source"] for k, v in created["topics"][0]["configs"].items()}
    check(sources["retention.ms"] == "DYNAMIC_TOPIC_CONFIG"
          and sources["segment.bytes"] == "DEFAULT_CONFIG",
          "kafka-python: CreateTopics answers each config with its source")
    try:
        admin.create_topics([NewTopic("kp-bad", 1, 1, topic_configs={"retention.ms": "nope"})])
        check(False, "a bad value is refused")
    except InvalidConfigurationError as e:
        check("Invalid value nope for configuration retention.ms" in str(e),
              "kafka-python: a bad value is refused with INVALID_CONFIG and Apache's message")
    check(topic in admin.list_topics() and "kp-bad" not in admin.list_topics(),
          "kafka-python: no topic made of a refused creation")

    def configs():
        got = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
        return {k: v["value"] for k, v in got["topic"][topic].items()}

    ops = {"retention.ms": ("SET", "7200000"), "cleanup.policy": ("APPEND", "compact"),
           "min.cleanable.dirty.ratio": ("SET", "0.25")}
    result = admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic, configs=ops)],
                                 incremental=True)
    check(result == {"topic": {topic: "OK"}}, f"kafka-python: IncrementalAlterConfigs: {result}")
    now = configs()
    check(now.get("retention.ms") == "7200000" and now.get("cleanup.policy") == "delete,compact"
          and now.get("min.cleanable.dirty.ratio") == "0.25", f"SET and APPEND: {now}")
    ops = {"cleanup.policy": ("SUBTRACT", "delete"), "min.cleanable.dirty.ratio": ("DELETE", None)}
    admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic, configs=ops)],
                        incremental=True)
    now = configs()
    check(now.get("cleanup.policy") == "compact" and "min.cleanable.dirty.ratio" not in now,
          f"SUBTRACT and DELETE: {now}")
    admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic,
                                        configs={"cleanup.policy": ("SET", "delete")})],
                        incremental=True)

    admin.create_partitions({topic: 3})
    partitions = admin.describe_topics([topic])[0]["partitions"]
    check(len(partitions) == 3, "kafka-python: 3 partitions after CreatePartitions")
    try:
        admin.create_partitions({topic: 3})
        check(False, "no increase is refused")
    except InvalidPartitionsError as e:
        check("Topic already has 3 partition(s)." in str(e),
              "kafka-python: the same count is refused with INVALID_PARTITIONS and Apache's message")

    produce(topic, 0, 10)
    deleted = admin.delete_records({KpPartition(topic, 0): 6})
    low = deleted[KpPartition(topic, 0)]["low_watermark"]
    check(low == 6, f"kafka-python: DeleteRecords moves the low watermark to 6: {low}")

    leader = next(p["leader_id"] for p in partitions if p["partition_index"] == 0)
    dirs = admin.describe_log_dirs()
    sizes = {(b["broker"], p["partition_index"]): p["partition_size"]
             for b in dirs for d in b["log_dirs"] for t in d["topics"] if t["name"] == topic
             for p in t["partitions"]}
    check(sizes.get((leader, 0), 0) > 0,
          f"kafka-python: DescribeLogDirs shows partition 0's bytes on its leader {leader}: {sizes}")
    check(all(d["total_bytes"] >= d["usable_bytes"] > 0 for b in dirs for d in b["log_dirs"]),
          "kafka-python: DescribeLogDirs shows the volume's total and usable bytes")

    cluster = admin.describe_cluster()
    check(len(cluster["brokers"]) == 3 and cluster["cluster_id"],
          f"kafka-python: DescribeCluster: {cluster['cluster_id']}, {len(cluster['brokers'])} brokers")


confluent()
kafka_python()
print("all checks passed")
