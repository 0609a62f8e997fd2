// What the group programs share: a check that stops at the first
// difference, and a ledger of the members' rebalance callbacks that
// records any partition given to a member while another owns it.

import java.util.*;
import java.util.function.BooleanSupplier;
import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RebalanceInProgressException;

public class Ledger {
    static final Map<Integer, String> owner = new HashMap<>();
    static final List<String> violations = new ArrayList<>();

    static void check(boolean ok, String what) {
        if (!ok) {
            System.out.println("FAILED: " + what);
            System.exit(1);
        }
        System.out.println("ok: " + what);
    }

    static void assigned(String member, Collection<TopicPartition> partitions) {
        for (TopicPartition tp : partitions) {
            String holder = owner.get(tp.partition());
            if (holder != null && !holder.equals(member))
                violations.add(tp + " given to " + member + " while " + holder + " owns it");
            owner.put(tp.partition(), member);
        }
    }

    static void released(String member, Collection<TopicPartition> partitions) {
        for (TopicPartition tp : partitions) owner.remove(tp.partition(), member);
    }

    static void forget(String member) {
        owner.values().removeIf(m -> m.equals(member));
    }

    static Set<Integer> ownedBy(String member) {
        Set<Integer> s = new TreeSet<>();
        owner.forEach((p, m) -> { if (m.equals(member)) s.add(p); });
        return s;
    }

    /** Whether the named members own an even share of the partitions each. */
    static BooleanSupplier balanced(List<String> members, int partitions) {
        List<Integer> even = Collections.nCopies(members.size(), partitions / members.size());
        return () -> {
            List<Integer> s = new ArrayList<>();
            for (String m : members) s.add(ownedBy(m).size());
            Collections.sort(s);
            return s.equals(even);
        };
    }

    /**
     * Commits what `member` consumed; whether the commit went through. One
     * racing a rebalance is refused (the member's epoch or generation moved
     * on, as on Apache's brokers): what it covered is read again by the
     * partition's next owner, which commits it.
     */
    static boolean commit(String member, Consumer<?, ?> consumer) {
        try {
            consumer.commitSync();
            return true;
        } catch (CommitFailedException | RebalanceInProgressException e) {
            System.out.println("note: " + member + "'s commit refused during a rebalance: " + e.getMessage());
            return false;
        }
    }

    /** Runs `poll` until `until` holds, or fails after `seconds`. */
    static void pollUntil(Runnable poll, BooleanSupplier until, int seconds, String what) {
        long deadline = System.currentTimeMillis() + seconds * 1000L;
        while (System.currentTimeMillis() < deadline) {
            poll.run();
            if (until.getAsBoolean()) {
                System.out.println("ok: " + what);
                return;
            }
        }
        check(false, what + " (owners: " + owner + ")");
    }
}
