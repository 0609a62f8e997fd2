// The Java client (kafka-clients 3.9.1) over TLS against a kaas cluster.
// Usage: java Secure MODE PKI_DIR BOOTSTRAP, MODE one of
//   ssl       SSL with a client certificate: a PEM key store
//             (PKI_DIR/app-keystore.pem, key and certificate);
//   sasl_ssl  SASL_SSL with SCRAM-SHA-512 as admin / admin-secret, and a
//             wrong password must be an authentication error at once.
// Both trust PKI_DIR/ca.pem (a PEM trust store) and check the broker's host
// name (the default https endpoint identification). Creates a topic,
// produces 30 records, consumes them in a group, commits and reads the
// commit back. Exits non-zero on the first difference; prints "all checks
// passed".

import java.time.Duration;
import java.util.*;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.serialization.*;

public class Secure {
    static String mode, pki, boot;
    static final int PARTITIONS = 3, RECORDS = 30;

    static void check(boolean ok, String what) {
        if (!ok) {
            System.out.println("FAILED: " + what);
            System.exit(1);
        }
        System.out.println("ok: " + what);
    }

    static Properties conf(String password) {
        Properties p = new Properties();
        p.put("bootstrap.servers", boot);
        p.put("ssl.truststore.type", "PEM");
        p.put("ssl.truststore.location", pki + "/ca.pem");
        if (mode.equals("ssl")) {
            p.put("security.protocol", "SSL");
            p.put("ssl.keystore.type", "PEM");
            p.put("ssl.keystore.location", pki + "/app-keystore.pem");
        } else {
            p.put("security.protocol", "SASL_SSL");
            p.put("sasl.mechanism", "SCRAM-SHA-512");
            p.put("sasl.jaas.config", "org.apache.kafka.common.security.scram.ScramLoginModule required "
                    + "username=\"admin\" password=\"" + password + "\";");
        }
        return p;
    }

    public static void main(String[] args) throws Exception {
        mode = args[0];
        pki = args[1];
        boot = args[2];
        String topic = "java-" + mode + "-" + ProcessHandle.current().pid();
        try (Admin admin = Admin.create(conf("admin-secret"))) {
            admin.createTopics(List.of(new NewTopic(topic, PARTITIONS, (short) 1))).all().get();
            check(true, "created " + topic + " over " + mode);

            Properties pp = conf("admin-secret");
            pp.put("acks", "all");
            try (KafkaProducer<String, String> p =
                    new KafkaProducer<>(pp, new StringSerializer(), new StringSerializer())) {
                for (int i = 0; i < RECORDS; i++)
                    p.send(new ProducerRecord<>(topic, i % PARTITIONS, null, "r" + i)).get();
            }
            check(true, "produced " + RECORDS + " over " + mode);

            String group = topic + "-group";
            Properties cp = conf("admin-secret");
            cp.put("group.id", group);
            cp.put("auto.offset.reset", "earliest");
            cp.put("enable.auto.commit", "false");
            int got = 0;
            try (KafkaConsumer<String, String> c =
                    new KafkaConsumer<>(cp, new StringDeserializer(), new StringDeserializer())) {
                c.subscribe(List.of(topic));
                long deadline = System.currentTimeMillis() + 60_000;
                while (got < RECORDS && System.currentTimeMillis() < deadline)
                    got += c.poll(Duration.ofMillis(500)).count();
                check(got == RECORDS, "consumed " + got + " of " + RECORDS + " in a group");
                c.commitSync();
            }
            long committed = admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get()
                    .values().stream().mapToLong(OffsetAndMetadata::offset).sum();
            check(committed == RECORDS, "the group's committed offsets add up to " + committed);
        }

        if (mode.equals("sasl_ssl")) {
            Properties bad = conf("wrong");
            long started = System.currentTimeMillis();
            try (Admin admin = Admin.create(bad)) {
                admin.describeCluster().nodes().get();
                check(false, "a wrong password is refused");
            } catch (ExecutionException e) {
                long elapsed = System.currentTimeMillis() - started;
                check(e.getCause() instanceof SaslAuthenticationException,
                        "a wrong password: an authentication error (" + e.getCause() + ")");
                check(elapsed < 5000, "within 5 s (" + elapsed + " ms)");
            }
        }
        System.out.println("all checks passed");
    }
}
