// Topics as the Java admin client (kafka-clients 3.9.1) manages them: a
// topic created with configs describes them with their sources and
// synonyms; IncrementalAlterConfigs sets, deletes, appends and subtracts,
// and refuses a bad value with InvalidConfigurationException; more
// partitions; DeleteRecords moves the low watermark that ListOffsets then
// answers; DescribeLogDirs shows the partition's bytes on its leader;
// DescribeCluster lists the brokers. Dynamic broker configs, as
// kafka-configs.sh sets them: log.retention.ms for every broker
// (--entity-default) is in force on a topic without its own, described as
// DYNAMIC_DEFAULT_BROKER_CONFIG; a broker's own log.cleaner.backoff.ms is
// DYNAMIC_BROKER_CONFIG; a setting kaas does not change at run time is
// refused with InvalidRequestException. Exits non-zero on the first
// difference; prints "all checks passed".

import java.util.*;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.InvalidConfigurationException;
import org.apache.kafka.common.errors.InvalidPartitionsException;
import org.apache.kafka.common.errors.InvalidRequestException;
import org.apache.kafka.common.serialization.StringSerializer;

public class TopicAdmin {
    static final String TOPIC = "java-admin";

    static void check(boolean ok, String what) {
        Ledger.check(ok, what);
    }

    static <T extends Throwable> T refused(Class<T> kind, org.apache.kafka.common.KafkaFuture<?> f)
            throws InterruptedException {
        try {
            f.get();
        } catch (ExecutionException e) {
            if (kind.isInstance(e.getCause())) return kind.cast(e.getCause());
            throw new AssertionError("refused with " + e.getCause(), e);
        }
        throw new AssertionError("not refused");
    }

    /** Config `name` of `res` once `holds`, or as last described after 10 s: a
     *  broker config changed through one broker reaches the others within a
     *  second. */
    static ConfigEntry describedOnce(Admin admin, ConfigResource res, String name,
            java.util.function.Predicate<ConfigEntry> holds) throws Exception {
        long deadline = System.currentTimeMillis() + 10_000;
        while (true) {
            ConfigEntry e = admin.describeConfigs(List.of(res)).all().get().get(res).get(name);
            if (holds.test(e) || System.currentTimeMillis() > deadline) return e;
            Thread.sleep(50);
        }
    }

    public static void main(String[] args) throws Exception {
        String boot = args[0];
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, boot);
        try (Admin admin = Admin.create(p)) {
            admin.createTopics(List.of(new NewTopic(TOPIC, 1, (short) 1)
                    .configs(Map.of("retention.ms", "3600000", "min.cleanable.dirty.ratio", "0.25"))))
                .all().get();
            ConfigResource res = new ConfigResource(ConfigResource.Type.TOPIC, TOPIC);
            Config config = admin.describeConfigs(List.of(res),
                    new DescribeConfigsOptions().includeSynonyms(true)).all().get().get(res);
            ConfigEntry retention = config.get("retention.ms");
            check(retention.value().equals("3600000")
                    && retention.source() == ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG,
                "retention.ms is the topic's own: " + retention);
            ConfigEntry segment = config.get("segment.bytes");
            check(segment.source() == ConfigEntry.ConfigSource.DEFAULT_CONFIG
                    && segment.synonyms().stream().anyMatch(s -> s.name().equals("log.segment.bytes")),
                "segment.bytes defaults to the broker's log.segment.bytes: " + segment);

            admin.incrementalAlterConfigs(Map.of(res, List.of(
                    new AlterConfigOp(new ConfigEntry("retention.ms", "7200000"), AlterConfigOp.OpType.SET),
                    new AlterConfigOp(new ConfigEntry("min.cleanable.dirty.ratio", ""), AlterConfigOp.OpType.DELETE),
                    new AlterConfigOp(new ConfigEntry("cleanup.policy", "compact"), AlterConfigOp.OpType.APPEND))))
                .all().get();
            config = admin.describeConfigs(List.of(res)).all().get().get(res);
            check(config.get("retention.ms").value().equals("7200000"), "SET");
            check(config.get("min.cleanable.dirty.ratio").source() == ConfigEntry.ConfigSource.DEFAULT_CONFIG,
                "DELETE: " + config.get("min.cleanable.dirty.ratio"));
            check(config.get("cleanup.policy").value().equals("delete,compact"),
                "APPEND to the default: " + config.get("cleanup.policy"));
            admin.incrementalAlterConfigs(Map.of(res, List.of(
                    new AlterConfigOp(new ConfigEntry("cleanup.policy", "compact"), AlterConfigOp.OpType.SUBTRACT))))
                .all().get();
            config = admin.describeConfigs(List.of(res)).all().get().get(res);
            check(config.get("cleanup.policy").value().equals("delete"), "SUBTRACT");
            InvalidConfigurationException bad = refused(InvalidConfigurationException.class,
                admin.incrementalAlterConfigs(Map.of(res, List.of(new AlterConfigOp(
                    new ConfigEntry("retention.ms", "soon"), AlterConfigOp.OpType.SET)))).all());
            check(bad.getMessage().contains("Invalid value soon for configuration retention.ms"),
                "a bad value is refused: " + bad.getMessage());

            admin.createPartitions(Map.of(TOPIC, NewPartitions.increaseTo(3))).all().get();
            int partitions = admin.describeTopics(List.of(TOPIC)).allTopicNames().get()
                .get(TOPIC).partitions().size();
            check(partitions == 3, "three partitions now: " + partitions);
            InvalidPartitionsException fewer = refused(InvalidPartitionsException.class,
                admin.createPartitions(Map.of(TOPIC, NewPartitions.increaseTo(2))).all());
            check(fewer.getMessage().contains("would not be an increase"), "no decrease: " + fewer.getMessage());

            Properties pp = new Properties();
            pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, boot);
            pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
            pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
            try (KafkaProducer<String, String> producer = new KafkaProducer<>(pp)) {
                for (int i = 0; i < 20; i++)
                    producer.send(new ProducerRecord<>(TOPIC, 0, "k" + i, "v" + i)).get();
            }
            TopicPartition tp = new TopicPartition(TOPIC, 0);
            long low = admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(5)))
                .lowWatermarks().get(tp).get().lowWatermark();
            check(low == 5, "DeleteRecords' low watermark: " + low);
            long earliest = admin.listOffsets(Map.of(tp, OffsetSpec.earliest())).partitionResult(tp).get().offset();
            check(earliest == 5, "ListOffsets earliest follows it: " + earliest);

            DescribeClusterResult cluster = admin.describeCluster();
            Collection<org.apache.kafka.common.Node> nodes = cluster.nodes().get();
            check(nodes.size() == 3 && !cluster.clusterId().get().isEmpty(),
                "DescribeCluster: " + nodes.size() + " brokers, cluster " + cluster.clusterId().get());
            List<Integer> ids = new ArrayList<>();
            for (org.apache.kafka.common.Node n : nodes) ids.add(n.id());
            Map<Integer, Map<String, LogDirDescription>> dirs =
                admin.describeLogDirs(ids).allDescriptions().get();
            long holders = 0, size = -1;
            for (Map<String, LogDirDescription> byDir : dirs.values())
                for (LogDirDescription d : byDir.values()) {
                    check(d.totalBytes().isPresent() && d.usableBytes().isPresent(), "the volume's space");
                    ReplicaInfo info = d.replicaInfos().get(tp);
                    if (info != null) {
                        holders++;
                        size = info.size();
                    }
                }
            check(holders == 1 && size > 0, "partition 0 is on its leader's folder only, " + size + " bytes");

            ConfigResource everyBroker = new ConfigResource(ConfigResource.Type.BROKER, "");
            admin.incrementalAlterConfigs(Map.of(everyBroker, List.of(new AlterConfigOp(
                    new ConfigEntry("log.retention.ms", "86400000"), AlterConfigOp.OpType.SET))))
                .all().get();
            java.util.function.Predicate<ConfigEntry> set = e -> e != null && e.value().equals("86400000")
                && e.source() == ConfigEntry.ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG;
            ConfigEntry every = describedOnce(admin, everyBroker, "log.retention.ms", set);
            check(set.test(every), "log.retention.ms for every broker: " + every);
            admin.createTopics(List.of(new NewTopic("java-admin-plain", 1, (short) 1))).all().get();
            ConfigResource plain = new ConfigResource(ConfigResource.Type.TOPIC, "java-admin-plain");
            ConfigEntry inForce = describedOnce(admin, plain, "retention.ms", set);
            check(set.test(inForce), "a topic without its own retention.ms follows it: " + inForce);
            ConfigResource oneBroker = new ConfigResource(ConfigResource.Type.BROKER,
                String.valueOf(ids.get(0)));
            admin.incrementalAlterConfigs(Map.of(oneBroker, List.of(new AlterConfigOp(
                    new ConfigEntry("log.cleaner.backoff.ms", "1000"), AlterConfigOp.OpType.SET))))
                .all().get();
            Config own = admin.describeConfigs(List.of(oneBroker)).all().get().get(oneBroker);
            ConfigEntry backoff = own.get("log.cleaner.backoff.ms");
            check(backoff.value().equals("1000") && !backoff.isReadOnly()
                    && backoff.source() == ConfigEntry.ConfigSource.DYNAMIC_BROKER_CONFIG,
                "broker " + ids.get(0) + "'s own log.cleaner.backoff.ms: " + backoff);
            ConfigEntry everyRetention = describedOnce(admin, oneBroker, "log.retention.ms",
                e -> e != null && e.source() == ConfigEntry.ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG);
            check(everyRetention != null && everyRetention.value().equals("86400000"),
                "and every broker's log.retention.ms: " + everyRetention);
            InvalidRequestException fixed = refused(InvalidRequestException.class,
                admin.incrementalAlterConfigs(Map.of(everyBroker, List.of(new AlterConfigOp(
                    new ConfigEntry("num.partitions", "4"), AlterConfigOp.OpType.SET)))).all());
            check(fixed.getMessage().contains("Cannot update these configs dynamically: Set(num.partitions)"),
                "a setting kaas does not change at run time: " + fixed.getMessage());
        }
        System.out.println("all checks passed");
    }
}
