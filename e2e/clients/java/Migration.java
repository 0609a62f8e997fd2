// Online migration with the Java client (kafka-clients 3.9.1): a rolling
// restart of 3 consumers from group.protocol=classic to consumer converts
// the group to a KIP-848 consumer group (its classic members served through
// JoinGroup/SyncGroup meanwhile); rolling them back converts it back when
// the last consumer-protocol member leaves. A ledger of the rebalance
// listeners' callbacks checks that no partition is ever owned by two
// members at once; every record is consumed and every partition's
// committed offset reaches its end. Exits non-zero on the first
// difference; prints "all checks passed".

import java.time.Duration;
import java.util.*;
import java.util.function.BooleanSupplier;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.*;

public class Migration {
    static String boot;
    static final String TOPIC = "java-migration";
    static final String GROUP = "java-migration-group";
    static final int PARTITIONS = 12;
    static final int PER_ROUND = 25;

    static class Member implements ConsumerRebalanceListener {
        final String name;
        final KafkaConsumer<String, String> consumer;
        final Set<String> seen = new HashSet<>();

        Member(String name, String protocol) {
            this.name = name;
            Properties p = new Properties();
            p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, boot);
            p.put(ConsumerConfig.GROUP_ID_CONFIG, GROUP);
            p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
            p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
            p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
            p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
            p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
            if (protocol.equals("classic")) {
                p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 500);
                p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, 10000);
            }
            consumer = new KafkaConsumer<>(p);
            consumer.subscribe(List.of(TOPIC), this);
        }

        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            Ledger.assigned(name, partitions);
        }

        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            // Commit what was read before giving the partitions up.
            commit();
            Ledger.released(name, partitions);
        }

        boolean commit() {
            return Ledger.commit(name, consumer);
        }

        public void onPartitionsLost(Collection<TopicPartition> partitions) {
            Ledger.released(name, partitions);
        }

        void poll() {
            for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(50)))
                seen.add(r.partition() + "@" + r.offset());
        }

        void close() {
            commit();
            consumer.close();
        }
    }

    static void pollAll(List<Member> members, BooleanSupplier until, int seconds, String what) {
        Ledger.pollUntil(() -> { for (Member m : members) m.poll(); }, until, seconds, what);
    }

    static BooleanSupplier balanced(List<Member> members) {
        List<String> names = new ArrayList<>();
        for (Member m : members) names.add(m.name);
        return Ledger.balanced(names, PARTITIONS);
    }

    static GroupType groupType(Admin admin) throws Exception {
        for (ConsumerGroupListing g : admin.listConsumerGroups().all().get())
            if (g.groupId().equals(GROUP)) return g.type().orElse(null);
        return null;
    }

    static void produce(int round) throws Exception {
        Properties pp = new Properties();
        pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, boot);
        pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
        pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(pp)) {
            for (int part = 0; part < PARTITIONS; part++)
                for (int i = 0; i < PER_ROUND; i++)
                    producer.send(new ProducerRecord<>(TOPIC, part, null, round + "-" + part + "-" + i));
            producer.flush();
        }
    }

    static final Set<String> seenByGone = new HashSet<>();

    static void replace(List<Member> members, int i, String name, String protocol) {
        Member gone = members.get(i);
        seenByGone.addAll(gone.seen);
        gone.close();
        Ledger.forget(gone.name);
        members.set(i, new Member(name, protocol));
        pollAll(members, balanced(members), 90, gone.name + " replaced by " + name + ": 4 partitions each");
    }

    public static void main(String[] args) throws Exception {
        boot = args[0];
        Properties ap = new Properties();
        ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, boot);
        try (Admin admin = Admin.create(ap)) {
            admin.createTopics(List.of(new NewTopic(TOPIC, PARTITIONS, (short) 1))).all().get();
            Thread.sleep(1000);
            produce(0);

            List<Member> members = new ArrayList<>();
            for (int i = 0; i < 3; i++) members.add(new Member("classic-" + i, "classic"));
            pollAll(members, balanced(members), 60, "3 classic members own 4 partitions each");
            Ledger.check(groupType(admin) == GroupType.CLASSIC, "a classic group");

            replace(members, 0, "consumer-0", "consumer");
            Ledger.check(groupType(admin) == GroupType.CONSUMER, "converted to a consumer group");
            replace(members, 1, "consumer-1", "consumer");
            replace(members, 2, "consumer-2", "consumer");
            produce(1);

            replace(members, 0, "classic-3", "classic");
            replace(members, 1, "classic-4", "classic");
            Ledger.check(groupType(admin) == GroupType.CONSUMER, "still a consumer group");
            replace(members, 2, "classic-5", "classic");
            Ledger.check(groupType(admin) == GroupType.CLASSIC, "converted back to a classic group");

            int total = 2 * PARTITIONS * PER_ROUND;
            pollAll(members, () -> {
                Set<String> all = new HashSet<>(seenByGone);
                for (Member m : members) all.addAll(m.seen);
                return all.size() >= total;
            }, 60, "every record consumed");
            pollAll(members, () -> members.stream().allMatch(Member::commit), 30, "the last commits");
            Ledger.check(Ledger.violations.isEmpty(), "no partition owned by two members at once: " + Ledger.violations);

            Set<TopicPartition> all = new HashSet<>();
            for (int i = 0; i < PARTITIONS; i++) all.add(new TopicPartition(TOPIC, i));
            Map<TopicPartition, OffsetAndMetadata> committed = members.get(0).consumer.committed(all);
            boolean atEnd = committed.values().stream()
                .allMatch(o -> o != null && o.offset() == 2 * PER_ROUND);
            Ledger.check(atEnd, "every partition committed at its end: " + committed);
            for (Member m : members) m.close();
        }
        System.out.println("all checks passed");
    }
}
