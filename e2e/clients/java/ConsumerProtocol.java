// The KIP-848 consumer protocol with the Java client (kafka-clients 3.9.1,
// group.protocol=consumer): 3 members share 12 partitions, each owned once;
// a 4th joins and one leaves; every record is consumed and committed. A
// ledger of the rebalance listeners' callbacks checks that no partition is
// ever owned by two members at once. Exits non-zero on the first
// difference; prints "all checks passed".

import java.time.Duration;
import java.util.*;
import java.util.function.BooleanSupplier;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.*;

public class ConsumerProtocol {
    static String boot;
    static final String TOPIC = "java-kip848";
    static final String GROUP = "java-kip848-group";
    static final int PARTITIONS = 12;
    static final int PER_PARTITION = 50;

    static class Member implements ConsumerRebalanceListener {
        final String name;
        final KafkaConsumer<String, String> consumer;
        final Set<String> seen = new HashSet<>();

        Member(String name) {
            this.name = name;
            Properties p = new Properties();
            p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, boot);
            p.put(ConsumerConfig.GROUP_ID_CONFIG, GROUP);
            p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
            p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
            p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
            p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
            p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
            consumer = new KafkaConsumer<>(p);
            consumer.subscribe(List.of(TOPIC), this);
        }

        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            Ledger.assigned(name, partitions);
        }

        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            // Commit what was read before giving the partitions up.
            Ledger.commit(name, consumer);
            Ledger.released(name, partitions);
        }

        public void onPartitionsLost(Collection<TopicPartition> partitions) {
            Ledger.released(name, partitions);
        }

        void poll() {
            for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(50)))
                seen.add(r.partition() + "@" + r.offset());
        }

        void close() {
            Ledger.commit(name, consumer);
            consumer.close();
        }
    }

    static void pollAll(List<Member> members, BooleanSupplier until, int seconds, String what) {
        Ledger.pollUntil(() -> { for (Member m : members) m.poll(); }, until, seconds, what);
    }

    // Reconciliation moves partitions a step at a time: wait for the
    // balanced end state (the ledger checks every step on the way).
    static BooleanSupplier balanced(List<Member> members) {
        List<String> names = new ArrayList<>();
        for (Member m : members) names.add(m.name);
        return Ledger.balanced(names, PARTITIONS);
    }

    public static void main(String[] args) throws Exception {
        boot = args[0];
        Properties ap = new Properties();
        ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, boot);
        try (Admin admin = Admin.create(ap)) {
            admin.createTopics(List.of(new NewTopic(TOPIC, PARTITIONS, (short) 1))).all().get();
        }
        Thread.sleep(1000);
        Properties pp = new Properties();
        pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, boot);
        pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
        pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(pp)) {
            for (int part = 0; part < PARTITIONS; part++)
                for (int i = 0; i < PER_PARTITION; i++)
                    producer.send(new ProducerRecord<>(TOPIC, part, null, part + "-" + i));
            producer.flush();
        }

        List<Member> members = new ArrayList<>();
        for (int i = 0; i < 3; i++) members.add(new Member("m" + i));
        pollAll(members, balanced(members), 60, "3 members own 4 of the 12 partitions each");

        members.add(new Member("m3"));
        pollAll(members, balanced(members), 60, "4 members own 3 partitions each");

        Member leaving = members.remove(0);
        Set<String> seen = new HashSet<>(leaving.seen);
        leaving.close();
        Ledger.forget(leaving.name);
        pollAll(members, balanced(members), 60, "the 3 left own 4 partitions each");

        int total = PARTITIONS * PER_PARTITION;
        pollAll(members, () -> {
            Set<String> all = new HashSet<>(seen);
            for (Member m : members) all.addAll(m.seen);
            return all.size() >= total;
        }, 60, "every record consumed");
        pollAll(members, () -> members.stream().allMatch(m -> Ledger.commit(m.name, m.consumer)), 30, "the last commits");
        Ledger.check(Ledger.violations.isEmpty(), "no partition owned by two members at once: " + Ledger.violations);

        Map<TopicPartition, OffsetAndMetadata> committed;
        Set<TopicPartition> all = new HashSet<>();
        for (int i = 0; i < PARTITIONS; i++) all.add(new TopicPartition(TOPIC, i));
        committed = members.get(0).consumer.committed(all);
        boolean atEnd = committed.values().stream()
            .allMatch(o -> o != null && o.offset() == PER_PARTITION);
        Ledger.check(atEnd, "every partition committed at its end: " + committed);
        for (Member m : members) m.close();
        System.out.println("all checks passed");
    }
}
