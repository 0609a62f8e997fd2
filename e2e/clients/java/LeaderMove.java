// A Java consumer (kafka-clients 3.9.1) across a change of partition
// leaders: it reads every record produced so far, prints "caught up" and
// waits for a line on standard input (the test moves leaders meanwhile and
// produces more), then reads on. With auto.offset.reset=none, a position
// the new leader could not validate through OffsetForLeaderEpoch (KIP-320)
// would throw (LogTruncationException, or NoOffsetForPartitionException on
// a reset); every record must come once, in offset order, with its value.
// Args: bootstrap topic partitions records-per-partition-before
// records-per-partition-after. Prints "all checks passed".

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

public class LeaderMove {
    static void check(boolean ok, String what) {
        Ledger.check(ok, what);
    }

    /// Polls until each partition has `upTo` records, checking each one's
    /// offset and value ("p{partition}-{offset}") as it comes.
    static void readUpTo(Consumer<String, String> consumer, Map<Integer, Long> next, long upTo) {
        long deadline = System.currentTimeMillis() + 120_000;
        while (next.values().stream().anyMatch(n -> n < upTo)) {
            if (System.currentTimeMillis() > deadline)
                check(false, "read up to " + upTo + " in time: " + next);
            for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                long expected = next.get(r.partition());
                if (r.offset() != expected || !r.value().equals("p" + r.partition() + "-" + r.offset()))
                    check(false, "p" + r.partition() + " offset " + r.offset() + " (" + r.value()
                        + ") follows " + (expected - 1));
                if (!r.leaderEpoch().isPresent())
                    check(false, "record " + r.partition() + "/" + r.offset() + " carries its leader epoch");
                next.put(r.partition(), expected + 1);
            }
        }
        check(true, "every record up to " + upTo + " once, in order, with its leader epoch");
    }

    public static void main(String[] args) throws Exception {
        String boot = args[0], topic = args[1];
        int partitions = Integer.parseInt(args[2]);
        long before = Long.parseLong(args[3]), after = Long.parseLong(args[4]);
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, boot);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "none");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, "java-leader-move");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        List<TopicPartition> tps = new ArrayList<>();
        Map<Integer, Long> next = new HashMap<>();
        for (int i = 0; i < partitions; i++) {
            tps.add(new TopicPartition(topic, i));
            next.put(i, 0L);
        }
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p)) {
            consumer.assign(tps);
            consumer.seekToBeginning(tps);
            readUpTo(consumer, next, before);
            System.out.println("caught up");
            System.out.flush();
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
            check("go".equals(in.readLine()), "told to go on");
            readUpTo(consumer, next, before + after);
            for (TopicPartition tp : tps)
                check(consumer.position(tp) == before + after, tp + " is at " + (before + after));
        }
        System.out.println("all checks passed");
    }
}
