// Exactly-once consume-transform-produce with the Java client (kafka-clients
// 3.9.1), the copier of broker/tests/transactions_kill9.rs: reads IN in a
// consumer group (read_committed) and writes every record's value to the
// same partition of OUT in transactions that commit the consumer's offsets
// with sendOffsetsToTransaction(offsets, consumer.groupMetadata()). The
// error handling is that of Apache's ExactlyOnceMessageProcessor example:
// a fencing error replaces the producer, any other KafkaException aborts;
// both rewind the consumer to the group's committed offsets.
//
// Usage: CopyExactlyOnce IN OUT GROUP TRANSACTIONAL_ID TOTAL GATE_FILE BOOTSTRAP
// It begins a transaction only while it has committed fewer records than
// GATE_FILE says (and stops when the file is gone), prints "committed N" after every commit and
// "copy done transactions=T aborted=A replaced=R" once N reaches TOTAL.

import java.nio.file.*;
import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.*;
import org.apache.kafka.common.serialization.*;

public class CopyExactlyOnce {
    static String in, out, group, txnId, boot;
    static Path gate;

    static KafkaProducer<byte[], byte[]> producer() {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, boot);
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txnId);
        p.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, 20000);
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 10000);
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 20000);
        p.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        p.put(ProducerConfig.RETRY_BACKOFF_MS_CONFIG, 50);
        p.put(ProducerConfig.METADATA_MAX_AGE_CONFIG, 1000);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
        long deadline = System.currentTimeMillis() + 120000;
        while (true) {
            KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p);
            try {
                producer.initTransactions();
                return producer;
            } catch (KafkaException e) {
                producer.close(Duration.ZERO);
                if (System.currentTimeMillis() > deadline) throw e;
                System.err.println("copier: initTransactions: " + e + "; again");
            }
        }
    }

    /** The gate; its file gone means the harness is gone: stop. */
    static long allowed() throws Exception {
        try {
            return Long.parseLong(Files.readString(gate).trim());
        } catch (NoSuchFileException e) {
            System.err.println("copier: the gate file is gone; stopping");
            System.exit(3);
            return 0;
        }
    }

    static long total(Map<Integer, Long> committed) {
        return committed.values().stream().mapToLong(Long::longValue).sum();
    }

    /** Seeks every assigned partition to the group's committed offset. */
    static Map<Integer, Long> rewind(KafkaConsumer<byte[], byte[]> consumer) {
        long deadline = System.currentTimeMillis() + 120000;
        while (true) {
            try {
                Set<TopicPartition> assigned = consumer.assignment();
                Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(assigned);
                Map<Integer, Long> at = new HashMap<>();
                for (TopicPartition tp : assigned) {
                    OffsetAndMetadata o = committed.get(tp);
                    if (o == null) {
                        consumer.seekToBeginning(List.of(tp));
                    } else {
                        consumer.seek(tp, o.offset());
                        at.put(tp.partition(), o.offset());
                    }
                }
                return at;
            } catch (KafkaException e) {
                if (System.currentTimeMillis() > deadline) throw e;
                System.err.println("copier: rewind: " + e + "; again");
            }
        }
    }

    public static void main(String[] args) throws Exception {
        in = args[0];
        out = args[1];
        group = args[2];
        txnId = args[3];
        long records = Long.parseLong(args[4]);
        gate = Paths.get(args[5]);
        boot = args[6];

        Properties c = new Properties();
        c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, boot);
        c.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        c.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        c.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 500);
        c.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, 10000);
        c.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 500);
        c.put(ConsumerConfig.METADATA_MAX_AGE_CONFIG, 1000);
        c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);

        long transactions = 0, aborted = 0, replaced = 0;
        Map<Integer, Long> committed = new HashMap<>();
        KafkaProducer<byte[], byte[]> producer = producer();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(c)) {
            consumer.subscribe(List.of(in));
            while (total(committed) < records) {
                if (total(committed) >= allowed()) {
                    // Keep the membership alive while gated.
                    consumer.pause(consumer.assignment());
                    consumer.poll(Duration.ofMillis(20));
                    continue;
                }
                consumer.resume(consumer.paused());
                ConsumerRecords<byte[], byte[]> rs = consumer.poll(Duration.ofMillis(200));
                if (rs.isEmpty()) continue;
                Map<TopicPartition, OffsetAndMetadata> next = new HashMap<>();
                try {
                    producer.beginTransaction();
                    for (ConsumerRecord<byte[], byte[]> r : rs) {
                        producer.send(new ProducerRecord<>(out, r.partition(), null, r.value()));
                        next.put(new TopicPartition(in, r.partition()), new OffsetAndMetadata(r.offset() + 1));
                    }
                    producer.sendOffsetsToTransaction(next, consumer.groupMetadata());
                    while (true) {
                        try {
                            producer.commitTransaction();
                            break;
                        } catch (TimeoutException e) {
                            System.err.println("copier: commit: " + e + "; again");
                        }
                    }
                    transactions++;
                    for (Map.Entry<TopicPartition, OffsetAndMetadata> e : next.entrySet())
                        committed.put(e.getKey().partition(), e.getValue().offset());
                } catch (ProducerFencedException | OutOfOrderSequenceException | FencedInstanceIdException e) {
                    System.err.println("copier: fatal: " + e + "; a new producer");
                    producer.close(Duration.ZERO);
                    producer = producer();
                    replaced++;
                    committed = rewind(consumer);
                } catch (KafkaException e) {
                    System.err.println("copier: transaction failed: " + e + "; abort");
                    try {
                        producer.abortTransaction();
                        aborted++;
                    } catch (KafkaException abortFailed) {
                        System.err.println("copier: abort: " + abortFailed + "; a new producer");
                        producer.close(Duration.ZERO);
                        producer = producer();
                        replaced++;
                    }
                    committed = rewind(consumer);
                }
                System.out.println("committed " + total(committed));
            }
        } finally {
            producer.close(Duration.ofSeconds(5));
        }
        System.out.println("copy done transactions=" + transactions + " aborted=" + aborted + " replaced=" + replaced);
    }
}
