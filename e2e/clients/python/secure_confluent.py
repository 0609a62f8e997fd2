"""confluent-kafka (librdkafka 2.16) over TLS against a kaas cluster.

Usage: secure_confluent.py MODE PKI_DIR BOOTSTRAP, MODE one of
  ssl       SSL with a client certificate (PKI_DIR/app.pem, app.key);
  sasl_ssl  SASL_SSL with SCRAM-SHA-512 as admin / admin-secret, and a
            wrong password must be an authentication error at once.
Both trust PKI_DIR/ca.pem and check the broker's host name. Creates a
topic, produces 30 records, consumes them in a group, commits and reads
the commit back. Exits non-zero on the first difference; prints "all
checks passed"."""

import os
import sys
import time

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

MODE, PKI, BOOT = sys.argv[1:4]
TOPIC = f"ck-{MODE}-{os.getpid()}"
RECORDS = 30


def check(cond, what):
    if not cond:
        print("FAILED:", what)
        sys.exit(1)
    print("ok:", what)


def conf(password="admin-secret", **more):
    c = {"bootstrap.servers": BOOT, "broker.address.family": "v4",
         "ssl.ca.location": os.path.join(PKI, "ca.pem"),
         "ssl.endpoint.identification.algorithm": "https"}
    if MODE == "ssl":
        c.update({"security.protocol": "SSL",
                  "ssl.certificate.location": os.path.join(PKI, "app.pem"),
                  "ssl.key.location": os.path.join(PKI, "app.key")})
    else:
        c.update({"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
                  "sasl.username": "admin", "sasl.password": password})
    c.update(more)
    return c


admin = AdminClient(conf())
for f in admin.create_topics([NewTopic(TOPIC, 3, 1)], request_timeout=20).values():
    f.result()
check(True, f"created {TOPIC} over {MODE}")

p = Producer(conf(acks="all"))
for i in range(RECORDS):
    p.produce(TOPIC, value=f"r{i}".encode(), partition=i % 3)
check(p.flush(20) == 0, f"produced {RECORDS} over {MODE}")

c = Consumer(conf(**{"group.id": f"{TOPIC}-group", "auto.offset.reset": "earliest",
                     "enable.auto.commit": False}))
c.subscribe([TOPIC])
got = 0
deadline = time.time() + 60
while got < RECORDS and time.time() < deadline:
    m = c.poll(0.5)
    if m is not None and m.error() is None:
        got += 1
check(got == RECORDS, f"consumed {got} of {RECORDS} in a group")
c.commit(asynchronous=False)
committed = c.committed([TopicPartition(TOPIC, p) for p in range(3)], timeout=20)
check(sum(tp.offset for tp in committed) == RECORDS,
      f"the group's committed offsets: {[tp.offset for tp in committed]}")
c.close()

if MODE == "sasl_ssl":
    errors = []
    bad = Producer(conf(password="wrong", error_cb=errors.append))
    started = time.time()
    while not any(e.code() == KafkaError._AUTHENTICATION for e in errors) \
            and time.time() - started < 5:
        bad.poll(0.1)
    refused = [e for e in errors if e.code() == KafkaError._AUTHENTICATION]
    check(refused, f"a wrong password: an authentication error within 5 s ({errors[:1]})")
    check("invalid credentials" in refused[0].str(), f"with Apache's message: {refused[0].str()}")

print("all checks passed")
