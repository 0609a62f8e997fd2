// Transactions with the Java client (kafka-clients 3.9.1): a committed and an
// aborted transaction over 3 partitions; read_committed readers see exactly
// the committed records, read_uncommitted every record once; the older of two
// producers with one transactional id is fenced and nothing of its open
// transaction becomes visible. Exits non-zero on the first difference;
// prints "all checks passed".

import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.serialization.*;

public class Transactions {
    static String boot;
    static final String TOPIC = "java-txn";
    static final int PARTITIONS = 3;

    static void check(boolean ok, String what) {
        if (!ok) {
            System.out.println("FAILED: " + what);
            System.exit(1);
        }
        System.out.println("ok: " + what);
    }

    static KafkaProducer<String, String> producer(String txnId) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, boot);
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txnId);
        p.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, 60000);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
        KafkaProducer<String, String> producer = new KafkaProducer<>(p);
        producer.initTransactions();
        return producer;
    }

    static void send(KafkaProducer<String, String> p, String prefix, int perPartition) throws Exception {
        for (int part = 0; part < PARTITIONS; part++)
            for (int i = 0; i < perPartition; i++)
                p.send(new ProducerRecord<>(TOPIC, part, null, prefix + "-" + part + "-" + i)).get();
    }

    static Set<String> values(String prefix, int perPartition) {
        Set<String> s = new TreeSet<>();
        for (int part = 0; part < PARTITIONS; part++)
            for (int i = 0; i < perPartition; i++) s.add(prefix + "-" + part + "-" + i);
        return s;
    }

    static List<String> readAll(String isolation, int atLeast) {
        return readTopic(TOPIC, isolation, atLeast);
    }

    public static void main(String[] args) throws Exception {
        boot = args[0];
        Properties a = new Properties();
        a.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, boot);
        try (Admin admin = Admin.create(a)) {
            admin.createTopics(List.of(new NewTopic(TOPIC, PARTITIONS, (short) 1))).all().get();
        }

        try (KafkaProducer<String, String> p = producer("java-txn-1")) {
            p.beginTransaction();
            send(p, "committed", 3);
            p.commitTransaction();
            p.beginTransaction();
            send(p, "aborted", 3);
            p.abortTransaction();
            p.beginTransaction();
            send(p, "after", 1);
            p.commitTransaction();
        }
        Set<String> want = values("committed", 3);
        want.addAll(values("after", 1));
        List<String> committed = readAll("read_committed", 12);
        check(new TreeSet<>(committed).equals(want) && committed.size() == 12,
              "read_committed sees exactly the committed records, once each");
        List<String> all = readAll("read_uncommitted", 21);
        Set<String> everything = new TreeSet<>(want);
        everything.addAll(values("aborted", 3));
        check(all.size() == 21 && new TreeSet<>(all).equals(everything),
              "read_uncommitted sees every record once");

        // An open transaction, as the admin client (kafka-transactions.sh) sees it.
        try (KafkaProducer<String, String> open = producer("java-txn-open");
             Admin admin = Admin.create(a)) {
            open.beginTransaction();
            send(open, "open", 1);
            boolean listed = admin.listTransactions().all().get().stream()
                .anyMatch(l -> l.transactionalId().equals("java-txn-open")
                    && l.state() == TransactionState.ONGOING);
            check(listed, "listTransactions shows the open transaction as Ongoing");
            TransactionDescription d = admin.describeTransactions(List.of("java-txn-open"))
                .all().get().get("java-txn-open");
            Set<TopicPartition> expected = new HashSet<>();
            for (int part = 0; part < PARTITIONS; part++) expected.add(new TopicPartition(TOPIC, part));
            check(d.state() == TransactionState.ONGOING && d.topicPartitions().equals(expected),
                  "describeTransactions shows it Ongoing with its 3 partitions: " + d);
            TopicPartition p0 = new TopicPartition(TOPIC, 0);
            boolean described = admin.describeProducers(List.of(p0)).partitionResult(p0).get()
                .activeProducers().stream()
                .anyMatch(ps -> ps.producerId() == d.producerId()
                    && ps.currentTransactionStartOffset().isPresent());
            check(described, "describeProducers shows the producer's open transaction");
            open.abortTransaction();
        }

        KafkaProducer<String, String> zombie = producer("java-txn-zombie");
        zombie.beginTransaction();
        send(zombie, "zombie", 2);
        try (KafkaProducer<String, String> successor = producer("java-txn-zombie")) {
            successor.beginTransaction();
            send(successor, "successor", 1);
            successor.commitTransaction();
        }
        boolean fenced = false;
        try {
            zombie.commitTransaction();
        } catch (ProducerFencedException e) {
            fenced = true;
        } catch (org.apache.kafka.common.KafkaException e) {
            fenced = e.getCause() instanceof ProducerFencedException
                || e instanceof org.apache.kafka.common.errors.InvalidProducerEpochException;
            if (!fenced) throw e;
        }
        zombie.close(Duration.ZERO);
        check(fenced, "the zombie's commit fails with ProducerFencedException");
        Set<String> after = new TreeSet<>(readAll("read_committed", 15));
        check(after.stream().noneMatch(v -> v.startsWith("zombie")), "nothing of the zombie's is visible");
        check(after.containsAll(values("successor", 1)), "the successor's transaction is visible");
        consumeTransformProduce(a);
        System.out.println("all checks passed");
    }

    /** sendOffsetsToTransaction with the consumer's group metadata (KIP-447). */
    static void consumeTransformProduce(Properties a) throws Exception {
        String in = "java-in", out = "java-out", group = "java-ctp";
        try (Admin admin = Admin.create(a)) {
            admin.createTopics(List.of(new NewTopic(in, PARTITIONS, (short) 1),
                                       new NewTopic(out, PARTITIONS, (short) 1))).all().get();
        }
        Properties pp = new Properties();
        pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, boot);
        pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
        pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
        try (KafkaProducer<String, String> plain = new KafkaProducer<>(pp)) {
            for (int i = 0; i < 30; i++) plain.send(new ProducerRecord<>(in, i % PARTITIONS, null, "in-" + i)).get();
        }
        Properties c = new Properties();
        c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, boot);
        c.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        c.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
        c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c);
             KafkaProducer<String, String> p = producer("java-ctp-txn");
             Admin admin = Admin.create(a)) {
            consumer.subscribe(List.of(in));
            int copied = 0;
            long deadline = System.currentTimeMillis() + 60000;
            while (copied < 30 && System.currentTimeMillis() < deadline) {
                ConsumerRecords<String, String> rs = consumer.poll(Duration.ofMillis(200));
                if (rs.isEmpty()) continue;
                p.beginTransaction();
                Map<TopicPartition, OffsetAndMetadata> next = new HashMap<>();
                for (ConsumerRecord<String, String> r : rs) {
                    p.send(new ProducerRecord<>(out, r.partition(), null, "out-" + r.value()));
                    next.put(new TopicPartition(in, r.partition()), new OffsetAndMetadata(r.offset() + 1));
                    copied++;
                }
                p.sendOffsetsToTransaction(next, consumer.groupMetadata());
                p.commitTransaction();
            }
            check(copied == 30, "copied every input record once (" + copied + ")");
            Map<TopicPartition, OffsetAndMetadata> committed =
                admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
            boolean atEnd = true;
            for (int part = 0; part < PARTITIONS; part++) {
                OffsetAndMetadata o = committed.get(new TopicPartition(in, part));
                atEnd &= o != null && o.offset() == 10;
            }
            check(atEnd, "the transactions committed the group's offsets: " + committed);

            // One more round, aborted: neither its output nor its offsets stay.
            try (KafkaProducer<String, String> plain = new KafkaProducer<>(pp)) {
                for (int i = 30; i < 33; i++) plain.send(new ProducerRecord<>(in, i % PARTITIONS, null, "in-" + i)).get();
            }
            int extra = 0;
            p.beginTransaction();
            Map<TopicPartition, OffsetAndMetadata> next = new HashMap<>();
            deadline = System.currentTimeMillis() + 30000;
            while (extra < 3 && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                    p.send(new ProducerRecord<>(out, r.partition(), null, "out-" + r.value()));
                    next.put(new TopicPartition(in, r.partition()), new OffsetAndMetadata(r.offset() + 1));
                    extra++;
                }
            }
            p.sendOffsetsToTransaction(next, consumer.groupMetadata());
            p.abortTransaction();
            Map<TopicPartition, OffsetAndMetadata> after =
                admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
            check(after.equals(committed), "an aborted transaction's offsets are dropped: " + after);
        }
        Set<String> want = new TreeSet<>();
        for (int i = 0; i < 30; i++) want.add("out-in-" + i);
        List<String> output = readTopic(out, "read_committed", 30);
        check(output.size() == 30 && new TreeSet<>(output).equals(want),
              "the output holds every input record exactly once (" + output.size() + ")");
    }

    static List<String> readTopic(String topic, String isolation, int atLeast) {
        Properties c = new Properties();
        c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, boot);
        c.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
        c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
        List<String> got = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c)) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int p = 0; p < PARTITIONS; p++) tps.add(new TopicPartition(topic, p));
            consumer.assign(tps);
            consumer.seekToBeginning(tps);
            long deadline = System.currentTimeMillis() + 30000, quiet = System.currentTimeMillis();
            while (System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(100))) {
                    got.add(r.value());
                    quiet = System.currentTimeMillis();
                }
                if (got.size() >= atLeast && System.currentTimeMillis() - quiet > 2000) break;
            }
        }
        return got;
    }
}
