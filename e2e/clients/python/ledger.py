"""What the group scripts share: a check that stops at the first
difference, and a ledger of the members' assign/revoke callbacks that
records any partition given to a member while another owns it."""

import sys
import time

from confluent_kafka import KafkaException

# ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, REBALANCE_IN_PROGRESS,
# STALE_MEMBER_EPOCH.
REFUSED_IN_A_REBALANCE = {22, 25, 27, 113}


def check(cond, what):
    if not cond:
        print("FAILED:", what)
        sys.exit(1)
    print("ok:", what)


class Ledger:
    """Who owns which partition, from the members' own callbacks."""

    def __init__(self):
        self.owner = {}
        self.violations = []

    def assigned(self, member, partitions):
        for p in partitions:
            holder = self.owner.get(p)
            if holder is not None and holder != member:
                self.violations.append(f"{p} given to {member} while {holder} owns it")
            self.owner[p] = member

    def revoked(self, member, partitions):
        for p in partitions:
            if self.owner.get(p) == member:
                del self.owner[p]

    def owned_by(self, member):
        return {p for p, m in self.owner.items() if m == member}

    def balanced(self, members, partitions):
        """Whether `members` (with a `name`) own an even share each."""
        return lambda: (sorted(len(self.owned_by(m.name)) for m in members)
                        == [partitions // len(members)] * len(members))


def commit(name, consumer):
    """Commits what `consumer` read; whether the commit went through. One
    racing a rebalance is refused (the member's generation or epoch moved
    on, as on Apache's brokers): what it covered is read again by the
    partition's next owner, which commits it."""
    try:
        consumer.commit(asynchronous=False)
        return True
    except KafkaException as e:
        code = e.args[0].code()
        if code == -168:  # _NO_OFFSET: nothing consumed since the last one
            return True
        if code in REFUSED_IN_A_REBALANCE:
            print(f"note: {name}'s commit refused during a rebalance: {e}")
            return False
        raise


def poll_all(members, until, timeout, what):
    """Polls every member (with a `poll()`) until `until()` holds."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        for m in members:
            m.poll()
        if until():
            print("ok:", what)
            return
    check(False, what)
