"""Replicas and leadership as kafka-python 3 manages them (what
kafka-reassign-partitions and kafka-leader-election do): a topic created
with a manual replica assignment reports it in Metadata and is led by each
partition's first replica once the controller has placed it; a
reassignment is listed while in progress and ends with the new first
replica leading; a preferred election where it already leads needs none;
cancelling what is not in progress and assigning an unknown broker are
refused with Apache's errors; the metadata quorum's one voter is the
controller Metadata names. Exits non-zero on the first difference;
prints "all checks passed"."""

import sys
import time

from kafka.admin import KafkaAdminClient, NewTopic
from kafka.errors import InvalidReplicationAssignmentError, NoReassignmentInProgressError
from kafka.structs import TopicPartition

from ledger import check

BOOT = sys.argv[1]
ELECTION_NOT_NEEDED = 84


def partitions(admin, topic):
    described = admin.describe_topics([topic])[0]["partitions"]
    return {p["partition_index"]: (p["leader_id"], p["replica_nodes"], p["isr_nodes"])
            for p in described}


def led_by(admin, topic, leaders, what):
    """Waits (the controller places leaders at its next round, 0.5 s here)
    until each partition of `topic` is led as `leaders` says."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        now = partitions(admin, topic)
        if all(now[p][0] == leader for p, leader in leaders.items()):
            check(True, f"{what}: {now}")
            return now
        time.sleep(0.1)
    check(False, f"{what}: still {partitions(admin, topic)}")


def main():
    admin = KafkaAdminClient(bootstrap_servers=BOOT)
    admin.create_topics([NewTopic("placed", num_partitions=-1, replication_factor=-1,
                                  replica_assignments={0: [1, 2], 1: [2, 0], 2: [0, 1]})])
    now = led_by(admin, "placed", {0: 1, 1: 2, 2: 0}, "each partition led by its first replica")
    check(now[1][1:] == ([2, 0], [2, 0]), f"Metadata reports the assigned replicas: {now[1]}")

    try:
        admin.create_topics([NewTopic("nowhere", num_partitions=-1, replication_factor=-1,
                                      replica_assignments={0: [1, 9]})])
        check(False, "a broker the cluster does not have is refused")
    except InvalidReplicationAssignmentError as e:
        check("broker 9, but no such broker is registered" in str(e), f"refused: {e}")

    move = TopicPartition("placed", 0)
    admin.alter_partition_reassignments({move: [0, 1]})
    # Listed until the controller has moved it (unless it already has).
    listed = admin.list_partition_reassignments().get(move)
    check(listed in (None, {"replicas": [0, 1], "adding_replicas": [], "removing_replicas": []}),
          f"in progress until the controller moves it: {listed}")
    now = led_by(admin, "placed", {0: 0}, "the reassignment moved the leader")
    check(now[0][1] == [0, 1], f"with the new replicas: {now[0]}")
    # The broker that answers (the controller Metadata names) follows the
    # new assignment within its follow interval, maybe after the one that
    # answered Metadata.
    deadline = time.monotonic() + 30
    while admin.list_partition_reassignments() != {} and time.monotonic() < deadline:
        time.sleep(0.1)
    check(admin.list_partition_reassignments() == {}, "and nothing is in progress")

    other = TopicPartition("placed", 1)
    cancelled = admin.alter_partition_reassignments({other: None})
    check(cancelled == {other: NoReassignmentInProgressError},
          f"cancelling what is not in progress is refused: {cancelled}")

    elected = admin.elect_leaders(0, {"placed": [0, 1, 2]})
    codes = sorted(p.error_code for r in elected.replica_election_results
                   for p in r.partition_result)
    check(codes == [ELECTION_NOT_NEEDED] * 3, f"preferred replicas lead: {codes}")
    # kafka-metadata-quorum's view: the controller's assignment.
    quorum = admin.describe_metadata_quorum()["topics"][0]["partitions"][0]
    controller = admin.describe_cluster()["controller_id"]
    voters = [v["replica_id"] for v in quorum["current_voters"]]
    check(quorum["leader_id"] == controller and voters == [controller]
          and quorum["high_watermark"] >= 1,
          f"the quorum's one voter is the controller Metadata names: {quorum}")
    admin.close()
    print("all checks passed")


main()
