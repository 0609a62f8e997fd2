// Client quotas with the Java client (kafka-clients 3.9.1): the admin
// sets, describes, refuses and removes quotas (alterClientQuotas,
// describeClientQuotas); an admin over its controller_mutation_rate is
// refused a topic (KIP-599); a producer and a consumer over their
// byte-rate quotas are throttled (their throttle-time metrics move, KIP-219) and held
// to the quota. The brokers measure rates over 2 windows of 1 s (the
// test's `quota.window.num`), so a run takes seconds.
// Args: bootstrap. Prints "all checks passed".

import java.time.Duration;
import java.util.*;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InvalidRequestException;
import org.apache.kafka.common.errors.ThrottlingQuotaExceededException;
import org.apache.kafka.common.quota.*;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class Quotas {
    static final String TOPIC = "java-quotas";
    static final String PRODUCER = "java-quota-producer";
    static final String CONSUMER = "java-quota-consumer";
    static final String ADMIN = "java-quota-admin";
    static final double PRODUCE_RATE = 50_000, FETCH_RATE = 100_000;
    static final int RECORD = 1_000;

    static void check(boolean ok, String what) {
        Ledger.check(ok, what);
    }

    static ClientQuotaEntity clientId(String id) {
        return new ClientQuotaEntity(Collections.singletonMap(ClientQuotaEntity.CLIENT_ID, id));
    }

    static void alter(Admin admin, ClientQuotaEntity entity, String key, Double value) throws Exception {
        admin.alterClientQuotas(List.of(new ClientQuotaAlteration(entity,
            List.of(new ClientQuotaAlteration.Op(key, value))))).all().get();
    }

    static void refused(Admin admin, String key, double value, String message) throws Exception {
        try {
            alter(admin, clientId("refused"), key, value);
            check(false, key + "=" + value + " refused");
        } catch (ExecutionException e) {
            check(e.getCause() instanceof InvalidRequestException
                && e.getCause().getMessage().equals(message),
                key + "=" + value + " refused: " + e.getCause());
        }
    }

    static double metric(Map<MetricName, ? extends Metric> metrics, String name) {
        for (Map.Entry<MetricName, ? extends Metric> m : metrics.entrySet())
            if (m.getKey().name().equals(name))
                return ((Number) m.getValue().metricValue()).doubleValue();
        check(false, "a metric named " + name);
        return 0;
    }

    public static void main(String[] args) throws Exception {
        String boot = args[0];
        Properties ap = new Properties();
        ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, boot);
        try (Admin admin = Admin.create(ap)) {
            admin.createTopics(List.of(new NewTopic(TOPIC, 1, (short) 1))).all().get();
            alter(admin, clientId(PRODUCER), "producer_byte_rate", PRODUCE_RATE);
            alter(admin, clientId(CONSUMER), "consumer_byte_rate", FETCH_RATE);
            ClientQuotaEntity someone = new ClientQuotaEntity(
                Collections.singletonMap(ClientQuotaEntity.USER, "someone"));
            alter(admin, someone, "request_percentage", 12.5);

            Map<ClientQuotaEntity, Map<String, Double>> described = admin.describeClientQuotas(
                ClientQuotaFilter.containsOnly(List.of(
                    ClientQuotaFilterComponent.ofEntity(ClientQuotaEntity.CLIENT_ID, PRODUCER))))
                .entities().get();
            check(described.equals(Map.of(clientId(PRODUCER), Map.of("producer_byte_rate", PRODUCE_RATE))),
                "the producer's quota described: " + described);
            described = admin.describeClientQuotas(ClientQuotaFilter.all()).entities().get();
            check(described.size() == 3 && described.get(someone).equals(Map.of("request_percentage", 12.5)),
                "every quota described: " + described);
            described = admin.describeClientQuotas(ClientQuotaFilter.contains(List.of(
                ClientQuotaFilterComponent.ofEntityType(ClientQuotaEntity.USER)))).entities().get();
            check(described.keySet().equals(Set.of(someone)), "users' quotas described: " + described);

            refused(admin, "bogus_rate", 1, "Invalid configuration key bogus_rate");
            refused(admin, "producer_byte_rate", 0, "Quota producer_byte_rate must be greater than 0");
            refused(admin, "consumer_byte_rate", 1.5, "consumer_byte_rate cannot be a fractional value.");

            alter(admin, someone, "request_percentage", null);
            described = admin.describeClientQuotas(ClientQuotaFilter.all()).entities().get();
            check(described.size() == 2 && !described.containsKey(someone), "a quota removed: " + described);
            alter(admin, clientId(ADMIN), "controller_mutation_rate", 1.0);
        }

        // KIP-599: 1 partition a second over 2 windows, a bucket of 2. The
        // first topic is taken whole (5 partitions, the bucket at -3); the
        // next is refused until the bucket refills.
        ap.put(AdminClientConfig.CLIENT_ID_CONFIG, ADMIN);
        try (Admin admin = Admin.create(ap)) {
            CreateTopicsOptions once = new CreateTopicsOptions().retryOnQuotaViolation(false);
            long deadline = System.currentTimeMillis() + 30_000;
            int made = 0;
            // Every broker follows the quota within a second: until one
            // refuses (bounded), each topic is made.
            while (true) {
                check(System.currentTimeMillis() < deadline, "a topic refused within 30 s");
                try {
                    admin.createTopics(List.of(new NewTopic("mutations-" + made, 5, (short) 1)), once)
                        .all().get();
                    made++;
                } catch (ExecutionException e) {
                    check(e.getCause() instanceof ThrottlingQuotaExceededException
                        && ((ThrottlingQuotaExceededException) e.getCause()).throttleTimeMs() > 0,
                        "a topic over the controller mutation quota refused: " + e.getCause());
                    break;
                }
            }
            check(made >= 1, "the first topic taken whole: " + made);
            check(!admin.listTopics().names().get().contains("mutations-" + made), "the refused topic not made");
        }

        Properties pp = new Properties();
        pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, boot);
        pp.put(ProducerConfig.CLIENT_ID_CONFIG, PRODUCER);
        pp.put(ProducerConfig.LINGER_MS_CONFIG, "0");
        pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        long produced = 0;
        try (Producer<byte[], byte[]> producer = new KafkaProducer<>(pp)) {
            byte[] value = new byte[RECORD];
            // Every broker follows the quotas within a second: send until the
            // leader throttles (bounded), then measure what the quota allows.
            long deadline = System.currentTimeMillis() + 30_000;
            // (NaN until a first response: not > 0 either.)
            while (!(metric(producer.metrics(), "produce-throttle-time-max") > 0)) {
                check(System.currentTimeMillis() < deadline, "the producer throttled within 30 s");
                producer.send(new ProducerRecord<>(TOPIC, value)).get();
                produced++;
            }
            long start = System.nanoTime();
            int measured = 300;
            for (int i = 0; i < measured; i++)
                producer.send(new ProducerRecord<>(TOPIC, value)).get();
            produced += measured;
            double seconds = (System.nanoTime() - start) / 1e9;
            double rate = measured * RECORD / seconds;
            // Measured over 2 windows of 1 s, a client may be one window
            // ahead of its quota at any time, never more.
            check(measured * RECORD <= PRODUCE_RATE * (seconds + 1), "the producer held to its quota: "
                + Math.round(rate) + " B/s over " + seconds + " s");
            System.out.println("producer: " + Math.round(rate) + " B/s against a quota of " + PRODUCE_RATE);
        }

        Properties cp = new Properties();
        cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, boot);
        cp.put(ConsumerConfig.CLIENT_ID_CONFIG, CONSUMER);
        cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        try (Consumer<byte[], byte[]> consumer = new KafkaConsumer<>(cp)) {
            TopicPartition tp = new TopicPartition(TOPIC, 0);
            consumer.assign(List.of(tp));
            consumer.seekToBeginning(List.of(tp));
            long read = 0, deadline = System.currentTimeMillis() + 60_000;
            long start = System.nanoTime();
            while (read < produced) {
                check(System.currentTimeMillis() < deadline, "read " + produced + " records in time: " + read);
                read += consumer.poll(Duration.ofMillis(200)).count();
            }
            double seconds = (System.nanoTime() - start) / 1e9;
            check(read == produced, "every record read once: " + read + " of " + produced);
            check(metric(consumer.metrics(), "fetch-throttle-time-max") > 0, "the consumer was throttled");
            double rate = produced * RECORD / seconds;
            check(produced * RECORD <= FETCH_RATE * (seconds + 1), "the consumer held to its quota: "
                + Math.round(rate) + " B/s over " + seconds + " s");
            System.out.println("consumer: " + Math.round(rate) + " B/s against a quota of " + FETCH_RATE);
        }
        System.out.println("all checks passed");
    }
}
