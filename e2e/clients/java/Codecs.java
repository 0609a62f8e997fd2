// The Java client (kafka-clients 3.9.1) producing with every codec it has
// (gzip, snappy in xerial's framing, lz4, zstd, none) and reading each
// topic back: every record, in order, with its value.
// Args: bootstrap. Prints "all checks passed".

import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class Codecs {
    static final int COUNT = 2_000;

    /// Quiet on success: thousands of records are checked.
    static void require(boolean ok, String what) {
        if (!ok) {
            System.out.println("FAILED: " + what);
            System.exit(1);
        }
    }

    static String value(String codec, int i) {
        return codec + "-" + i + "-" + "x".repeat(i % 300);
    }

    public static void main(String[] args) throws Exception {
        String boot = args[0];
        for (String codec : List.of("none", "gzip", "snappy", "lz4", "zstd")) {
            String topic = "java-codec-" + codec;
            Properties p = new Properties();
            p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, boot);
            p.put(ProducerConfig.ACKS_CONFIG, "all");
            p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, codec);
            p.put(ProducerConfig.LINGER_MS_CONFIG, "20");
            p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
            p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
            try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
                List<java.util.concurrent.Future<RecordMetadata>> sent = new ArrayList<>();
                for (int i = 0; i < COUNT; i++)
                    sent.add(producer.send(new ProducerRecord<>(topic, 0, null, value(codec, i))));
                for (int i = 0; i < COUNT; i++)
                    require(sent.get(i).get().offset() == i, codec + " record " + i + " at offset " + i);
            }
            Properties c = new Properties();
            c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, boot);
            c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
            c.put(ConsumerConfig.CHECK_CRCS_CONFIG, "true");
            c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
            c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
            try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c)) {
                TopicPartition tp = new TopicPartition(topic, 0);
                consumer.assign(List.of(tp));
                consumer.seekToBeginning(List.of(tp));
                int next = 0;
                long deadline = System.currentTimeMillis() + 60_000;
                while (next < COUNT) {
                    require(System.currentTimeMillis() < deadline, codec + ": read " + next + " of " + COUNT + " in time");
                    for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                        require(r.offset() == next && r.value().equals(value(codec, next)),
                            codec + ": offset " + r.offset() + " holds record " + next);
                        next++;
                    }
                }
            }
            System.out.println(codec + ": " + COUNT + " records stored and read back");
        }
        System.out.println("all checks passed");
    }
}
