"""kafka-python over TLS against a kaas cluster.

Usage: secure_kafka_python.py MODE PKI_DIR BOOTSTRAP, MODE one of
  ssl       SSL with a client certificate (PKI_DIR/app.pem, app.key);
  sasl_ssl  SASL_SSL with SCRAM-SHA-512 as admin / admin-secret, and a
            wrong password must fail with an authentication error at once.
Both trust PKI_DIR/ca.pem and check the broker's host name. Produces 30
records, consumes them in a group, commits and reads the commit back.
Exits non-zero on the first difference; prints "all checks passed"."""

import logging
import os
import sys
import time

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic
from kafka.errors import KafkaError

MODE, PKI, BOOT = sys.argv[1:4]
TOPIC = f"kp-{MODE}-{os.getpid()}"
RECORDS = 30


def check(cond, what):
    if not cond:
        print("FAILED:", what)
        sys.exit(1)
    print("ok:", what)


def conf(password="admin-secret"):
    c = {"bootstrap_servers": BOOT, "ssl_cafile": os.path.join(PKI, "ca.pem"),
         "ssl_check_hostname": True, "request_timeout_ms": 20000}
    if MODE == "ssl":
        c.update(security_protocol="SSL", ssl_certfile=os.path.join(PKI, "app.pem"),
                 ssl_keyfile=os.path.join(PKI, "app.key"))
    else:
        c.update(security_protocol="SASL_SSL", sasl_mechanism="SCRAM-SHA-512",
                 sasl_plain_username="admin", sasl_plain_password=password)
    return c


admin = KafkaAdminClient(**conf())
admin.create_topics([NewTopic(TOPIC, 3, 1)])
admin.close()
check(True, f"created {TOPIC} over {MODE}")

producer = KafkaProducer(acks="all", **conf())
for i in range(RECORDS):
    producer.send(TOPIC, f"r{i}".encode())
producer.flush(20)
producer.close()
check(True, f"produced {RECORDS} over {MODE}")

consumer = KafkaConsumer(TOPIC, group_id=f"{TOPIC}-group", auto_offset_reset="earliest",
                         enable_auto_commit=False, **conf())
got = 0
deadline = time.time() + 60
while got < RECORDS and time.time() < deadline:
    for records in consumer.poll(timeout_ms=500).values():
        got += len(records)
check(got == RECORDS, f"consumed {got} of {RECORDS} in a group")
consumer.commit()
partitions = [TopicPartition(TOPIC, p) for p in range(3)]
committed = sum(consumer.committed(tp) or 0 for tp in partitions)
check(committed == RECORDS, f"the group's committed offsets add up to {committed}")
consumer.close()



class FirstRefusal(logging.Handler):
    """When kafka-python first logs the broker's SASL refusal: it reports
    the error at once but keeps retrying, against Apache Kafka too, so
    its log is where the failure shows."""

    def __init__(self):
        super().__init__()
        self.at = None
        self.message = None

    def emit(self, record):
        text = record.getMessage()
        if self.at is None and "SaslAuthenticationFailedError" in text:
            self.at, self.message = time.time(), text


if MODE == "sasl_ssl":
    refusal = FirstRefusal()
    logging.getLogger("kafka").addHandler(refusal)
    started = time.time()
    bad = KafkaProducer(api_version=(3, 9), max_block_ms=5000, **conf(password="wrong"))
    try:
        bad.send(TOPIC, b"never").get(timeout=5)
        check(False, "a wrong password is refused")
    except KafkaError:
        pass
    bad.close(timeout=1)
    check(refusal.at is not None and refusal.at - started < 5,
          f"a wrong password: SASL_AUTHENTICATION_FAILED within 5 s: {refusal.message}")
    check("invalid credentials" in (refusal.message or ""), "with Apache's message")

print("all checks passed")
