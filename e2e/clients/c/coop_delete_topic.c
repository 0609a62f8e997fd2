/* librdkafka's test 0113 (cooperative_rebalance), subtest h_delete_topic,
 * against the system librdkafka (Debian's 2.0.2, the one kcat uses): a
 * cooperative-sticky consumer with a rebalance callback subscribes to two
 * one-partition topics; once both are assigned (in one assign call), the
 * second is deleted (DeleteTopics through the consumer's own handle); once
 * the assignment is the first topic's alone, the consumer is closed and
 * destroyed.
 *
 * usage: coop_delete_topic BOOTSTRAP
 * Prints each step and "all checks passed"; exits 1 on the first failure,
 * or when the whole run takes longer than 60 s.
 *
 * librdkafka before 2.1.0 never returns from rd_kafka_destroy() after this
 * flow, against any broker: a partition removed from the cluster keeps
 * ops in its fetch queue that hold references back to it, and so to its
 * broker (librdkafka #4187, "Fix close blocked by reference count in test
 * 0113", released in 2.1.0). This program therefore checks the close on
 * every version and the destroy only where the client can finish it.
 * Build: cc -o coop_delete_topic coop_delete_topic.c -lrdkafka
 * (librdkafka-dev). RDKAFKA_DEBUG sets librdkafka's debug contexts. */

#include <librdkafka/rdkafka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The first release with librdkafka #4187. */
#define DESTROY_FIXED_IN 0x020100ff

static int assign_calls;

static double now(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void fail(const char *what) {
        printf("FAILED: %s\n", what);
        fflush(stdout);
        exit(1);
}

static void out_of_time(int sig) {
        (void)sig;
        /* Only async-signal-safe calls here. */
        static const char msg[] = "FAILED: not done within 60 s\n";
        if (write(1, msg, sizeof(msg) - 1) < 0)
                _exit(2);
        _exit(1);
}

/* The test's DefaultRebalanceCb: incremental assign and unassign. */
static void rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                      rd_kafka_topic_partition_list_t *parts, void *opaque) {
        rd_kafka_error_t *error = NULL;
        (void)opaque;
        if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
                assign_calls++;
                printf("assigned %d partition(s)\n", parts->cnt);
                error = rd_kafka_incremental_assign(rk, parts);
        } else {
                printf("revoked %d partition(s)%s\n", parts->cnt,
                       rd_kafka_assignment_lost(rk) ? " (lost)" : "");
                error = rd_kafka_incremental_unassign(rk, parts);
        }
        if (error)
                fail(rd_kafka_error_string(error));
        fflush(stdout);
}

/* How many partitions are assigned; *only names the topic of a single one. */
static int assigned(rd_kafka_t *rk, char **only) {
        rd_kafka_topic_partition_list_t *parts;
        int n;
        if (rd_kafka_assignment(rk, &parts))
                fail("rd_kafka_assignment");
        n = parts->cnt;
        *only = n == 1 ? strdup(parts->elems[0].topic) : NULL;
        rd_kafka_topic_partition_list_destroy(parts);
        return n;
}

/* Waits for one admin result on q; fails on an error. */
static void admin_result(rd_kafka_queue_t *q, const char *what) {
        rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 10000);
        if (!ev || rd_kafka_event_error(ev))
                fail(what);
        rd_kafka_event_destroy(ev);
}

static void create_topics(rd_kafka_t *rk, const char **names) {
        char errstr[256];
        rd_kafka_NewTopic_t *topics[2];
        rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
        int i;
        for (i = 0; i < 2; i++) {
                topics[i] = rd_kafka_NewTopic_new(names[i], 1, 1, errstr,
                                                  sizeof(errstr));
                if (!topics[i])
                        fail(errstr);
        }
        rd_kafka_CreateTopics(rk, topics, 2, NULL, q);
        admin_result(q, "CreateTopics");
        rd_kafka_NewTopic_destroy_array(topics, 2);
        rd_kafka_queue_destroy(q);
}

static void delete_topic(rd_kafka_t *rk, const char *topic) {
        rd_kafka_DeleteTopic_t *del = rd_kafka_DeleteTopic_new(topic);
        rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
        rd_kafka_DeleteTopics(rk, &del, 1, NULL, q);
        admin_result(q, "DeleteTopics");
        rd_kafka_queue_destroy(q);
        rd_kafka_DeleteTopic_destroy(del);
        printf("deleted %s\n", topic);
        fflush(stdout);
}

/* test_wait_topic_exists: until Metadata lists the topic without error. */
static void wait_topic_exists(rd_kafka_t *rk, const char *name) {
        double start = now();
        while (now() - start < 10) {
                rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, name, NULL);
                const struct rd_kafka_metadata *md;
                int exists = 0;
                if (!rd_kafka_metadata(rk, 0, rkt, &md, 5000)) {
                        exists = md->topic_cnt == 1 && !md->topics[0].err &&
                                 md->topics[0].partition_cnt == 1;
                        rd_kafka_metadata_destroy(md);
                }
                rd_kafka_topic_destroy(rkt);
                if (exists)
                        return;
        }
        fail("a created topic never showed in Metadata");
}

int main(int argc, char **argv) {
        char errstr[512], topic1[64], topic2[64], group[64];
        const char *names[2] = {topic1, topic2};
        rd_kafka_conf_t *conf;
        rd_kafka_t *rk;
        rd_kafka_topic_partition_list_t *topics;
        int deleted = 0;
        double start, closing;
        if (argc != 2)
                fail("usage: coop_delete_topic BOOTSTRAP");
        signal(SIGALRM, out_of_time);
        alarm(60);
        printf("librdkafka %s\n", rd_kafka_version_str());
        snprintf(topic1, sizeof(topic1), "0113-h-delete-topic-1-%d", getpid());
        snprintf(topic2, sizeof(topic2), "0113-h-delete-topic-2-%d", getpid());
        snprintf(group, sizeof(group), "0113-h-delete-topic-%d", getpid());

        conf = rd_kafka_conf_new();
#define SET(k, v)                                                              \
        if (rd_kafka_conf_set(conf, k, v, errstr, sizeof(errstr)))             \
        fail(errstr)
        SET("bootstrap.servers", argv[1]);
        SET("group.id", group);
        SET("partition.assignment.strategy", "cooperative-sticky");
        SET("topic.metadata.refresh.interval.ms", "3000");
        SET("session.timeout.ms", "15000");
        SET("auto.offset.reset", "earliest");
        SET("broker.address.family", "v4");
        if (getenv("RDKAFKA_DEBUG"))
                SET("debug", getenv("RDKAFKA_DEBUG"));
        rd_kafka_conf_set_rebalance_cb(conf, rebalance);
        rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
        if (!rk)
                fail(errstr);
        rd_kafka_poll_set_consumer(rk);
        create_topics(rk, names);
        wait_topic_exists(rk, topic1);
        wait_topic_exists(rk, topic2);

        topics = rd_kafka_topic_partition_list_new(2);
        rd_kafka_topic_partition_list_add(topics, topic1, RD_KAFKA_PARTITION_UA);
        rd_kafka_topic_partition_list_add(topics, topic2, RD_KAFKA_PARTITION_UA);
        if (rd_kafka_subscribe(rk, topics))
                fail("subscribe");
        rd_kafka_topic_partition_list_destroy(topics);

        start = now();
        for (;;) {
                char *only = NULL;
                int n;
                rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 500);
                if (m)
                        rd_kafka_message_destroy(m);
                if (now() - start > 40)
                        fail("the assignment never settled");
                n = assigned(rk, &only);
                if (n == 2 && !deleted) {
                        if (assign_calls != 1)
                                fail("expected 1 assign call");
                        delete_topic(rk, topic2);
                        deleted = 1;
                }
                if (n == 1 && deleted) {
                        if (strcmp(only, topic1))
                                fail("the assignment kept the deleted topic");
                        printf("assignment no longer includes %s\n", topic2);
                        free(only);
                        break;
                }
                free(only);
        }
        printf("closing\n");
        fflush(stdout);
        closing = now();
        if (rd_kafka_consumer_close(rk))
                fail("rd_kafka_consumer_close");
        printf("closed in %.2f s\n", now() - closing);
        if (rd_kafka_version() >= DESTROY_FIXED_IN) {
                rd_kafka_destroy(rk);
                printf("destroyed in %.2f s\n", now() - closing);
        } else {
                printf("not destroying: librdkafka %s never finishes "
                       "rd_kafka_destroy() after a consumed partition is "
                       "deleted (librdkafka #4187, fixed in 2.1.0)\n",
                       rd_kafka_version_str());
        }
        printf("all checks passed\n");
        return 0;
}
