"""SASL_PLAINTEXT with SCRAM through confluent-kafka (librdkafka 2.16)
against `kaas-broker local --sasl --admin-password admin-secret`: the admin
produces, consumes in a group and commits with SCRAM-SHA-512 and
SCRAM-SHA-256; a wrong password is an authentication error within seconds;
a user the admin creates (AlterUserScramCredentials) with an ACL
(CreateAcls) writes where the ACL allows and nowhere else; DescribeAcls
lists the ACL. Exits non-zero on the first difference; prints
"all checks passed"."""

import sys
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import (AclBinding, AclBindingFilter, AclOperation,
                                   AclPermissionType, AdminClient, NewTopic,
                                   ResourcePatternType, ResourceType,
                                   ScramCredentialInfo, ScramMechanism,
                                   UserScramCredentialUpsertion)

BOOT = sys.argv[1]
ADMIN_PASSWORD = "admin-secret"


def check(cond, what):
    if not cond:
        print("FAILED:", what)
        sys.exit(1)
    print("ok:", what)


def conf(mechanism, user, password, **more):
    c = {"bootstrap.servers": BOOT, "broker.address.family": "v4",
         "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism,
         "sasl.username": user, "sasl.password": password}
    c.update(more)
    return c


admin = AdminClient(conf("SCRAM-SHA-512", "admin", ADMIN_PASSWORD))
for f in admin.create_topics([NewTopic(t, 3, 1) for t in ("scram-orders", "granted", "denied")],
                             request_timeout=20).values():
    f.result()
check(True, "the admin creates topics over SCRAM-SHA-512")

for mechanism in ("SCRAM-SHA-512", "SCRAM-SHA-256"):
    p = Producer(conf(mechanism, "admin", ADMIN_PASSWORD))
    for i in range(10):
        p.produce("scram-orders", value=f"{mechanism}-{i}".encode())
    check(p.flush(20) == 0, f"produced over {mechanism}")

c = Consumer(conf("SCRAM-SHA-256", "admin", ADMIN_PASSWORD, **{
    "group.id": "scram-group", "auto.offset.reset": "earliest", "enable.auto.commit": False}))
c.subscribe(["scram-orders"])
got = []
deadline = time.time() + 30
while len(got) < 20 and time.time() < deadline:
    m = c.poll(0.5)
    if m is not None and m.error() is None:
        got.append(m.value())
check(len(got) == 20, f"consumed in a group over SCRAM-SHA-256: {len(got)}")
c.commit(asynchronous=False)
committed = c.committed(c.assignment(), timeout=20)
check(sum(tp.offset for tp in committed if tp.offset >= 0) == 20, "the group's offsets committed")
c.close()

errors = []
bad = Producer(conf("SCRAM-SHA-512", "admin", "wrong", error_cb=errors.append))
deadline = time.time() + 5
while not any(e.code() == KafkaError._AUTHENTICATION for e in errors) and time.time() < deadline:
    bad.poll(0.1)
check(any(e.code() == KafkaError._AUTHENTICATION for e in errors),
      f"a wrong password: an authentication error within 5 s ({errors[:1]})")

alice = UserScramCredentialUpsertion(
    "alice", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), b"alice-pw", b"alice-salt")
for f in admin.alter_user_scram_credentials([alice], request_timeout=20).values():
    f.result()
write_granted = AclBinding(ResourceType.TOPIC, "granted", ResourcePatternType.LITERAL,
                           "User:alice", "*", AclOperation.WRITE, AclPermissionType.ALLOW)
for f in admin.create_acls([write_granted], request_timeout=20).values():
    f.result()
listed = admin.describe_acls(AclBindingFilter(
    ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
    AclOperation.ANY, AclPermissionType.ANY), request_timeout=20).result()
check(listed == [write_granted], f"DescribeAcls lists the ACL: {listed}")

# The new user and ACL reach every broker within the refresh delay.
time.sleep(1.5)
outcomes = {}


def delivered(err, msg):
    outcomes[msg.topic()] = err


p = Producer(conf("SCRAM-SHA-256", "alice", "alice-pw", **{"message.timeout.ms": 10000}))
p.produce("granted", value=b"by alice", callback=delivered)
p.produce("denied", value=b"by alice", callback=delivered, partition=0)
p.flush(20)
check(outcomes.get("granted") is None and "granted" in outcomes, "alice writes where the ACL allows")
check(outcomes.get("denied") is not None
      and outcomes["denied"].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED,
      f"alice is refused elsewhere: {outcomes.get('denied')}")

print("all checks passed")
