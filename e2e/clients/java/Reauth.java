// KIP-368 with the Java client (kafka-clients 3.9.1): against a broker whose
// SASL sessions last connections.max.reauth.ms (2 s in the test), a producer
// sends one record every 100 ms for 5 s and a consumer group reads them all
// and commits, over SASL_PLAINTEXT with SCRAM-SHA-512 as admin /
// admin-secret: the client re-authenticates on its own, so nothing fails.
// Usage: java Reauth BOOTSTRAP. Exits non-zero on the first difference;
// prints "all checks passed".

import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.serialization.*;

public class Reauth {
    static void check(boolean ok, String what) {
        if (!ok) {
            System.out.println("FAILED: " + what);
            System.exit(1);
        }
        System.out.println("ok: " + what);
    }

    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", args[0]);
        p.put("security.protocol", "SASL_PLAINTEXT");
        p.put("sasl.mechanism", "SCRAM-SHA-512");
        p.put("sasl.jaas.config", "org.apache.kafka.common.security.scram.ScramLoginModule required "
                + "username=\"admin\" password=\"admin-secret\";");
        String topic = "java-reauth";
        int records = 50;
        Properties pp = (Properties) p.clone();
        pp.put("acks", "all");
        try (KafkaProducer<String, String> producer =
                new KafkaProducer<>(pp, new StringSerializer(), new StringSerializer())) {
            for (int i = 0; i < records; i++) {
                producer.send(new ProducerRecord<>(topic, "r" + i)).get();
                Thread.sleep(100);
            }
        }
        check(true, "produced " + records + " across several session lifetimes");
        Properties cp = (Properties) p.clone();
        cp.put("group.id", "java-reauth-group");
        cp.put("auto.offset.reset", "earliest");
        cp.put("enable.auto.commit", "false");
        int got = 0;
        try (KafkaConsumer<String, String> consumer =
                new KafkaConsumer<>(cp, new StringDeserializer(), new StringDeserializer())) {
            consumer.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 60_000;
            while (got < records && System.currentTimeMillis() < deadline)
                got += consumer.poll(Duration.ofMillis(500)).count();
            check(got == records, "consumed " + got + " of " + records + " in a group");
            consumer.commitSync();
            // One more lifetime with the group: heartbeats and a commit go on.
            Thread.sleep(2_500);
            consumer.poll(Duration.ofMillis(100));
            consumer.commitSync();
        }
        check(true, "the group committed after its sessions were renewed");
        System.out.println("all checks passed");
    }
}
