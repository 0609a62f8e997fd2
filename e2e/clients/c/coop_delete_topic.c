/* librdkafka's test 0113 (cooperative_rebalance), subtest h_delete_topic,
 * against the system librdkafka (Debian's 2.0.2, the one kcat uses): a
 * cooperative-sticky consumer with a rebalance callback subscribes to two
 * topics; once both are assigned, the second is deleted (DeleteTopics
 * through the consumer's own handle); once the assignment is the first
 * topic's alone, the consumer is closed and destroyed.
 *
 * usage: coop_delete_topic BOOTSTRAP TOPIC1 TOPIC2 GROUP
 * (FETCH_WAIT_MAX_MS and RDKAFKA_DEBUG set those settings.)
 * Prints each step; exits 0 once closed and destroyed, 1 on a failure.
 *
 * Not run by the test suite yet: against kaas, librdkafka 2.0.2 hangs in
 * rd_kafka_destroy after the close (issue #33, item 5), keeping two
 * references to the broker that led the deleted partition with no request
 * outstanding. Build: apt-get install librdkafka-dev; cc -o coop_delete_topic
 * coop_delete_topic.c -lrdkafka. */

#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

/* The test's DefaultRebalanceCb: incremental assign and unassign. */
static void rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                      rd_kafka_topic_partition_list_t *parts, void *opaque) {
        rd_kafka_error_t *error = NULL;
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

static int assigned(rd_kafka_t *rk, const char **only) {
        rd_kafka_topic_partition_list_t *parts;
        int n;
        if (rd_kafka_assignment(rk, &parts))
                fail("rd_kafka_assignment");
        n = parts->cnt;
        *only = n == 1 ? strdup(parts->elems[0].topic) : NULL;
        rd_kafka_topic_partition_list_destroy(parts);
        return n;
}

static void delete_topic(rd_kafka_t *rk, const char *topic) {
        rd_kafka_DeleteTopic_t *del = rd_kafka_DeleteTopic_new(topic);
        rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
        rd_kafka_event_t *ev;
        rd_kafka_DeleteTopics(rk, &del, 1, NULL, q);
        ev = rd_kafka_queue_poll(q, 10000);
        if (!ev || rd_kafka_event_error(ev))
                fail("DeleteTopics");
        rd_kafka_event_destroy(ev);
        rd_kafka_queue_destroy(q);
        rd_kafka_DeleteTopic_destroy(del);
        printf("deleted %s\n", topic);
        fflush(stdout);
}

int main(int argc, char **argv) {
        char errstr[512];
        rd_kafka_conf_t *conf;
        rd_kafka_t *rk;
        rd_kafka_topic_partition_list_t *topics;
        int deleted = 0;
        double start, closing;
        if (argc != 5)
                fail("usage: coop_delete_topic BOOTSTRAP TOPIC1 TOPIC2 GROUP");
        printf("librdkafka %s\n", rd_kafka_version_str());
        conf = rd_kafka_conf_new();
#define SET(k, v)                                                              \
        if (rd_kafka_conf_set(conf, k, v, errstr, sizeof(errstr)))             \
        fail(errstr)
        SET("bootstrap.servers", argv[1]);
        SET("group.id", argv[4]);
        SET("partition.assignment.strategy", "cooperative-sticky");
        SET("topic.metadata.refresh.interval.ms", "3000");
        SET("session.timeout.ms", "15000");
        SET("auto.offset.reset", "earliest");
        SET("broker.address.family", "v4");
        if (getenv("FETCH_WAIT_MAX_MS"))
                SET("fetch.wait.max.ms", getenv("FETCH_WAIT_MAX_MS"));
        if (getenv("RDKAFKA_DEBUG"))
                SET("debug", getenv("RDKAFKA_DEBUG"));
        rd_kafka_conf_set_rebalance_cb(conf, rebalance);
        rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
        if (!rk)
                fail(errstr);
        rd_kafka_poll_set_consumer(rk);
        topics = rd_kafka_topic_partition_list_new(2);
        rd_kafka_topic_partition_list_add(topics, argv[2], RD_KAFKA_PARTITION_UA);
        rd_kafka_topic_partition_list_add(topics, argv[3], RD_KAFKA_PARTITION_UA);
        if (rd_kafka_subscribe(rk, topics))
                fail("subscribe");
        rd_kafka_topic_partition_list_destroy(topics);

        start = now();
        for (;;) {
                const char *only = NULL;
                int n;
                rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 500);
                if (m)
                        rd_kafka_message_destroy(m);
                if (now() - start > 60)
                        fail("the assignment never settled");
                n = assigned(rk, &only);
                if (n == 2 && !deleted) {
                        if (assign_calls != 1)
                                fail("expected 1 assign call");
                        delete_topic(rk, argv[3]);
                        deleted = 1;
                }
                if (n == 1 && deleted) {
                        if (strcmp(only, argv[2]))
                                fail("the assignment kept the deleted topic");
                        printf("assignment no longer includes %s\n", argv[3]);
                        free((void *)only);
                        break;
                }
                free((void *)only);
        }
        printf("closing\n");
        fflush(stdout);
        closing = now();
        rd_kafka_consumer_close(rk);
        rd_kafka_destroy(rk);
        printf("closed and destroyed in %.2f s\n", now() - closing);
        return 0;
}
